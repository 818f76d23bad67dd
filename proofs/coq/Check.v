(** * Check: every main theorem depends on no assumption.

    proofs/check.sh compiles this file and requires one
    "Closed under the global context" line per [Print Assumptions]
    command below. *)

From PackingTheory Require Import Defs Semantics KeyLemma Invariant Corollaries Exec TopKeys
  BoundedWait BoundedWaitExec BestFitPad.

(* Definitions *)
Print Assumptions protected_set_spec.
(* The sort-free protected set is the set of the min(B-1, N_L) largest keys *)
Print Assumptions protected_set_length.
Print Assumptions protected_top.
Print Assumptions protected_upward_closed.
Print Assumptions top_keys_unique.
(* Key lemma *)
Print Assumptions key_lemma.
(* Main theorem *)
Print Assumptions protected_invariant.
Print Assumptions protected_span_unique.
(* Corollaries *)
Print Assumptions mass_bound.
Print Assumptions mass_bound_uniform.
Print Assumptions unstarted_below_threshold.
Print Assumptions startup.
Print Assumptions repeated_corpus.
Print Assumptions earliest_pass.
Print Assumptions earliest_pass_ceil.
Print Assumptions ceil_div_spec.
Print Assumptions earliest_pass_r789.
Print Assumptions earliest_pass_r196.
Print Assumptions earliest_pass_r39.
Print Assumptions earliest_pass_r9.
Print Assumptions earliest_pass_r1.
(* Executable rule and refinement *)
Print Assumptions best_fit_some.
Print Assumptions best_fit_none.
Print Assumptions shortest_some.
Print Assumptions shortest_lexmin.
Print Assumptions refill_post.
Print Assumptions exec_arrive_refines.
Print Assumptions exec_select_refines.
Print Assumptions run_reachable.
Print Assumptions run_started_trace.
Print Assumptions run_protected.
(* Bounded-wait policy: the relation and its start-delay bound (BoundedWait.v) *)
Print Assumptions bw_invariant.
Print Assumptions bw_start_bound.
Print Assumptions bw_unstarted_bound.
Print Assumptions bw_conservation.
Print Assumptions bw_rows_full.
Print Assumptions bw_arows_prefix.
(* Bounded-wait executable rule and refinement (BoundedWaitExec.v) *)
Print Assumptions bw_pick_spec.
Print Assumptions bw_exec_select_refines.
Print Assumptions bw_run_reachable.
Print Assumptions bw_run_start_bound.
Print Assumptions bw_run_unstarted_bound.
Print Assumptions bw_run_conservation.
Print Assumptions bw_run_rows_full.
Print Assumptions bw_bound_attained_example.
(* Bestfit-pad policy: the buffer clog and the row at which every row becomes padding (BestFitPad.v) *)
Print Assumptions bfp_invariant.
Print Assumptions bfp_starvation.
Print Assumptions bfp_placed_count.
Print Assumptions bfp_placed_tokens.
Print Assumptions bfp_starved_absorbing.
Print Assumptions bfp_empty_row_all_long.
Print Assumptions bfp_starvation_example.
