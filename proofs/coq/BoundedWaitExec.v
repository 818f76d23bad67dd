(** * BoundedWaitExec: the executable bounded-wait rule, and its refinement.

    [bw_pick] implements the engines' rule for a row with [rem] free
    positions: at a row start ([rem = R]), if the oldest unstarted span [u]
    (the first in buffer order with [cur = orig]) arrived more than [A] rows
    ago, take [u]; otherwise the loader's rule (largest span with
    [cur <= rem], ties earliest; else the shortest, ties earliest).
    [bw_emit] emits [min (cur s) rem] tokens of the chosen span: the whole
    span when it fits (removed), else a crop that fills the row and keeps the
    suffix in place ([continue]).

    [bw_run] is the driver: before every selection it refills while fewer
    than [B] spans are buffered (one batch at a time, sizes from [batches],
    cycled, never past the end of [arr]), records the current row as the
    arrival row of every new occurrence, and stops at the first selection
    boundary where the buffer still holds fewer than [B] spans.

    Refinement: every refill batch and every selection is a step of
    [wstep] (BoundedWait.v) with [bmax] = the largest batch size, so
    [bw_run] only produces reachable states ([bw_run_reachable]) and the
    theorems of BoundedWait.v hold for the real rule; the trace theorems
    [bw_run_start_bound], [bw_run_unstarted_bound], [bw_run_conservation] and
    [bw_run_rows_full] restate them on the emitted events. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs Exec BoundedWait.

Record bx : Type := mkBX {
  bx_narr    : nat;
  bx_buf     : buffer;
  bx_row     : nat;
  bx_rem     : nat;
  bx_arows   : list nat;
  bx_starts  : list (nat * nat);
  bx_emitted : nat;
  bx_batch   : nat   (* refill batches taken so far *)
}.

Record bres : Type := mkBR {
  br_state : bx;
  br_trace : list event;
  br_stop  : stop_reason
}.

(** The oldest unstarted span with its index. *)
Fixpoint first_unstarted_at (b : buffer) : option (nat * span) :=
  match b with
  | [] => None
  | s :: t =>
      if unstartedb s then Some (0, s)
      else match first_unstarted_at t with
           | Some (k, u) => Some (S k, u)
           | None => None
           end
  end.

Lemma first_unstarted_at_some : forall b k u,
  first_unstarted_at b = Some (k, u) -> nth_error b k = Some u /\ first_unstarted b = Some u.
Proof.
  induction b as [|s b IH]; simpl; intros k u H; [discriminate|].
  destruct (unstartedb s).
  - injection H as <- <-. split; reflexivity.
  - destruct (first_unstarted_at b) as [[k' u']|] eqn:E; [|discriminate].
    injection H as <- <-. simpl. apply IH; reflexivity.
Qed.

Lemma first_unstarted_at_none : forall b,
  first_unstarted_at b = None -> first_unstarted b = None.
Proof.
  induction b as [|s b IH]; simpl; intros H; [reflexivity|].
  destruct (unstartedb s); [discriminate|].
  destruct (first_unstarted_at b) as [[? ?]|]; [discriminate|apply IH; reflexivity].
Qed.

(** Tokens emitted in row [r] by a list of events. *)
Fixpoint row_sum (r : nat) (l : list event) : nat :=
  match l with
  | [] => 0
  | ev :: t => (if ev_row ev =? r then ev_emitted ev else 0) + row_sum r t
  end.

(** All emitted tokens of a list of events. *)
Fixpoint emitted_sum (l : list event) : nat :=
  match l with
  | [] => 0
  | ev :: t => ev_emitted ev + emitted_sum t
  end.

(** The first-start records of a list of events (newest first). *)
Definition start_records (l : list event) : list (nat * nat) :=
  map (fun ev => (ev_occ ev, ev_row ev)) (filter (fun ev => ev_start ev =? 0) l).

Lemma row_sum_app : forall r l1 l2, row_sum r (l1 ++ l2) = row_sum r l1 + row_sum r l2.
Proof. induction l1 as [|e l1 IH]; intros l2; simpl; [reflexivity|rewrite IH; lia]. Qed.

Lemma row_sum_rev : forall r l, row_sum r (rev l) = row_sum r l.
Proof.
  induction l as [|e l IH]; simpl; [reflexivity|].
  rewrite row_sum_app, IH; simpl; lia.
Qed.

Lemma emitted_sum_app : forall l1 l2, emitted_sum (l1 ++ l2) = emitted_sum l1 + emitted_sum l2.
Proof. induction l1 as [|e l1 IH]; intros l2; simpl; [reflexivity|rewrite IH; lia]. Qed.

Lemma emitted_sum_rev : forall l, emitted_sum (rev l) = emitted_sum l.
Proof.
  induction l as [|e l IH]; simpl; [reflexivity|].
  rewrite emitted_sum_app, IH; simpl; lia.
Qed.

Lemma start_records_in : forall l i r,
  In (i, r) (start_records l) -> exists ev, In ev l /\ ev_occ ev = i /\ ev_row ev = r /\ ev_start ev = 0.
Proof.
  intros l i r H. unfold start_records in H. apply in_map_iff in H.
  destruct H as [ev [Heq Hin]]. injection Heq as <- <-.
  apply filter_In in Hin. destruct Hin as [Hin Hz]. apply Nat.eqb_eq in Hz.
  exists ev; repeat split; assumption.
Qed.

Lemma start_records_of : forall l ev,
  In ev l -> ev_start ev = 0 -> In (ev_occ ev, ev_row ev) (start_records l).
Proof.
  intros l ev Hin Hz. unfold start_records. apply in_map_iff.
  exists ev; split; [reflexivity|]. apply filter_In. split; [exact Hin|apply Nat.eqb_eq; exact Hz].
Qed.

Section BWExec.

Variables (R B A : nat) (batches arr : list nat).

(** The largest refill batch (at least 1, as [batch_size]). *)
Definition bmax : nat := fold_right Nat.max 1 batches.

(** The proved bound for these values of [B], [A] and [batches]. *)
Definition bw_delay_bound : nat := bw_bound B A bmax.

Lemma bmax_pos : 1 <= bmax.
Proof.
  unfold bmax. induction batches as [|x l IH]; simpl; lia.
Qed.

Lemma fold_max_ge : forall (l : list nat) d, d <= fold_right Nat.max d l.
Proof. induction l as [|x l IH]; intros d; simpl; [lia|specialize (IH d); lia]. Qed.

Lemma nth_le_fold_max : forall (l : list nat) j d, nth j l d <= fold_right Nat.max d l.
Proof.
  induction l as [|x l IH]; intros [|j] d; simpl; try lia.
  specialize (IH j d). lia.
Qed.

Lemma batch_size_bmax : forall j, batch_size batches j <= bmax.
Proof.
  intros j. unfold batch_size, bmax.
  assert (H : forall l : list nat, match l with
                                   | [] => 1
                                   | _ :: _ => Nat.max 1 (nth (j mod length l) l 1)
                                   end <= fold_right Nat.max 1 l).
  { intros [|x l]; [simpl; lia|].
    pose proof (nth_le_fold_max (x :: l) (j mod length (x :: l)) 1).
    pose proof (fold_max_ge (x :: l) 1). lia. }
  apply H.
Qed.

Definition bw_arrive (st : bx) : bx :=
  mkBX (S (bx_narr st))
       (bx_buf st ++ [mkSpan (bx_narr st) (arr_len arr (bx_narr st)) (arr_len arr (bx_narr st))])
       (bx_row st) (bx_rem st) (bx_arows st ++ [bx_row st]) (bx_starts st) (bx_emitted st)
       (bx_batch st).

(** Append up to [k] arrivals (fewer if the stream runs out). *)
Fixpoint bw_arrive_n (k : nat) (st : bx) : bx :=
  match k with
  | 0 => st
  | S k' => if bx_narr st <? length arr then bw_arrive_n k' (bw_arrive st) else st
  end.

Definition bw_next_batch (st : bx) : bx :=
  mkBX (bx_narr st) (bx_buf st) (bx_row st) (bx_rem st) (bx_arows st) (bx_starts st)
       (bx_emitted st) (S (bx_batch st)).

Fixpoint bw_refill_loop (fuel : nat) (st : bx) : bx :=
  match fuel with
  | 0 => st
  | S f =>
      if (length (bx_buf st) <? B) && (bx_narr st <? length arr)
      then bw_refill_loop f (bw_arrive_n (batch_size batches (bx_batch st)) (bw_next_batch st))
      else st
  end.

Definition bw_refill (st : bx) : bx := bw_refill_loop (S (length arr)) st.

(** The forced start, if this is a row start and the oldest unstarted span is overdue. *)
Definition forced_pick (st : bx) : option (nat * span) :=
  if bx_rem st =? R then
    match first_unstarted_at (bx_buf st) with
    | Some (k, u) => if A <? bx_row st - nth (sid u) (bx_arows st) 0 then Some (k, u) else None
    | None => None
    end
  else None.

Definition bw_pick (st : bx) : option (nat * span) :=
  match forced_pick st with
  | Some p => Some p
  | None =>
      match best_fit (bx_rem st) (bx_buf st) with
      | Some p => Some p
      | None => shortest (bx_buf st)
      end
  end.

(** Emit [min (cur s) rem] tokens of the span [s] at index [k]. *)
Definition bw_emit (st : bx) (k : nat) (s : span) : bx * event :=
  let rem := bx_rem st in
  let m := Nat.min (cur s) rem in
  (mkBX (bx_narr st)
        (if m =? cur s then remove_at k (bx_buf st)
         else replace_at k (mkSpan (sid s) (orig s) (cur s - m)) (bx_buf st))
        (if rem - m =? 0 then S (bx_row st) else bx_row st)
        (if rem - m =? 0 then R else rem - m)
        (bx_arows st)
        (if cur s =? orig s then (sid s, bx_row st) :: bx_starts st else bx_starts st)
        (bx_emitted st + m)
        (bx_batch st),
   mkEv (bx_row st) (R - rem) (sid s) (orig s - cur s) m (negb (m =? cur s))).

Fixpoint bw_run_from (fuel : nat) (st : bx) (acc : list event) : bres :=
  match fuel with
  | 0 => mkBR st (rev acc) OutOfFuel
  | S f =>
      let st1 := bw_refill st in
      if length (bx_buf st1) <? B then mkBR st1 (rev acc) Exhausted
      else match bw_pick st1 with
           | Some (k, s) => let (st2, ev) := bw_emit st1 k s in bw_run_from f st2 (ev :: acc)
           | None => mkBR st1 (rev acc) NoSpan
           end
  end.

Definition bxinit : bx := mkBX 0 [] 0 R [] [] 0 0.

Definition bw_run (fuel : nat) : bres := bw_run_from fuel bxinit [].

(** ** Refinement. *)

Definition bproj (st : bx) : wstate :=
  mkW (bx_narr st) (bx_buf st) (bx_row st) (bx_rem st) (bx_arows st) (bx_starts st) (bx_emitted st).

Definition alen : nat -> nat := arr_len arr.

Notation reach := (wreachable R B A bmax alen).

Hypotheses (HR0 : 0 < R) (HB1 : 1 <= B) (Hpos : forall x, In x arr -> 0 < x).

Lemma alen_pos : forall j, j < length arr -> 0 < alen j.
Proof. intros j Hj. apply Hpos. unfold alen, arr_len. apply nth_In; exact Hj. Qed.

Lemma bw_arrive_n_eq : forall k st,
  bx_narr st <= length arr ->
  bw_arrive_n k st =
    mkBX (bx_narr st + Nat.min k (length arr - bx_narr st))
         (bx_buf st ++ fresh alen (bx_narr st) (Nat.min k (length arr - bx_narr st)))
         (bx_row st) (bx_rem st)
         (bx_arows st ++ repeat (bx_row st) (Nat.min k (length arr - bx_narr st)))
         (bx_starts st) (bx_emitted st) (bx_batch st).
Proof.
  induction k as [|k IH]; intros st H.
  - destruct st; cbn. rewrite !Nat.add_0_r, !app_nil_r. reflexivity.
  - cbn [bw_arrive_n]. destruct (bx_narr st <? length arr) eqn:E.
    + apply Nat.ltb_lt in E. rewrite IH by (cbn; lia). cbn [bw_arrive bx_narr bx_buf bx_row bx_rem bx_arows bx_starts bx_emitted bx_batch].
      replace (Nat.min (S k) (length arr - bx_narr st))
        with (S (Nat.min k (length arr - S (bx_narr st)))) by lia.
      f_equal.
      * lia.
      * rewrite <- app_assoc. reflexivity.
      * rewrite <- app_assoc. reflexivity.
    + apply Nat.ltb_nlt in E. replace (Nat.min (S k) (length arr - bx_narr st)) with 0 by lia.
      destruct st; cbn. rewrite !Nat.add_0_r, !app_nil_r. reflexivity.
Qed.

Lemma refill_batch_refines : forall st,
  bx_narr st <= length arr -> length (bx_buf st) < B -> bx_narr st < length arr ->
  let st' := bw_arrive_n (batch_size batches (bx_batch st)) (bw_next_batch st) in
  wstep R B A bmax alen (bproj st) (bproj st') /\ bx_narr st' <= length arr /\
  bx_rem st' = bx_rem st.
Proof.
  intros st H1 H2 H3 st'. subst st'.
  rewrite bw_arrive_n_eq by (simpl; exact H1). cbn [bw_next_batch bx_narr bx_buf bx_row bx_rem bx_arows bx_starts bx_emitted bx_batch].
  pose proof (batch_size_pos batches (bx_batch st)) as Hp.
  pose proof (batch_size_bmax (bx_batch st)) as Hm.
  set (k' := Nat.min (batch_size batches (bx_batch st)) (length arr - bx_narr st)).
  split; [|split; [unfold k'; lia|reflexivity]].
  unfold bproj; simpl.
  apply (wstep_arrive R B A bmax alen (bproj st) k'); simpl; [exact H2|unfold k'; lia|].
  intros j Hj. apply alen_pos. unfold k' in Hj. lia.
Qed.

Lemma refill_loop_reachable : forall f st,
  reach (bproj st) -> bx_narr st <= length arr ->
  reach (bproj (bw_refill_loop f st)) /\ bx_narr (bw_refill_loop f st) <= length arr.
Proof.
  induction f as [|f IH]; intros st H1 H2; simpl; [split; assumption|].
  destruct ((length (bx_buf st) <? B) && (bx_narr st <? length arr)) eqn:C; [|split; assumption].
  apply andb_true_iff in C; destruct C as [C1 C2].
  apply Nat.ltb_lt in C1; apply Nat.ltb_lt in C2.
  destruct (refill_batch_refines st H2 C1 C2) as [Hs [Hn _]].
  apply IH; [apply (wreach_step _ _ _ _ _ _ _ H1 Hs)|exact Hn].
Qed.

Lemma bw_refill_reachable : forall st,
  reach (bproj st) -> bx_narr st <= length arr ->
  reach (bproj (bw_refill st)) /\ bx_narr (bw_refill st) <= length arr.
Proof.
  intros st; apply refill_loop_reachable.
Qed.

Lemma first_unstarted_at_of : forall b u,
  first_unstarted b = Some u -> exists k, first_unstarted_at b = Some (k, u).
Proof.
  induction b as [|s b IH]; simpl; intros u H; [discriminate|].
  destruct (unstartedb s); [injection H as <-; exists 0; reflexivity|].
  destruct (IH u H) as [k Hk]. rewrite Hk. exists (S k); reflexivity.
Qed.

(** The pick respects the forced rule, and it is a buffered span. *)
Lemma bw_pick_spec : forall st k s,
  bw_pick st = Some (k, s) ->
  nth_error (bx_buf st) k = Some s /\ (forall u, forced R A (bproj st) u -> s = u).
Proof.
  intros st k s H. unfold bw_pick in H.
  destruct (forced_pick st) as [[k0 u0]|] eqn:Ef.
  - injection H as <- <-. unfold forced_pick in Ef.
    destruct (bx_rem st =? R); [|discriminate].
    destruct (first_unstarted_at (bx_buf st)) as [[k1 u1]|] eqn:E1; [|discriminate].
    destruct (A <? _); [|discriminate]. injection Ef as <- <-.
    destruct (first_unstarted_at_some _ _ _ E1) as [Hn Hf].
    split; [exact Hn|]. intros u [_ [Hu _]]. unfold bproj in Hu; simpl in Hu.
    rewrite Hf in Hu. injection Hu as <-. reflexivity.
  - assert (Hno : forall u, ~ forced R A (bproj st) u).
    { intros u [HR [Hu Ho]]. unfold bproj in HR, Hu, Ho; simpl in HR, Hu, Ho.
      destruct (first_unstarted_at_of _ _ Hu) as [k1 Hk1].
      unfold forced_pick in Ef. rewrite HR, Nat.eqb_refl, Hk1 in Ef.
      unfold arow in Ho; simpl in Ho.
      destruct (Nat.ltb_spec A (bx_row st - nth (sid u) (bx_arows st) 0)); [discriminate|lia]. }
    split; [|intros u Hu; exfalso; exact (Hno u Hu)].
    destruct (best_fit (bx_rem st) (bx_buf st)) as [[k1 u1]|] eqn:Eb.
    + injection H as <- <-. apply (best_fit_some _ _ _ _ Eb).
    + apply (shortest_some _ _ _ H).
Qed.

Lemma bw_emit_proj : forall st k s b1 b2,
  bx_buf st = b1 ++ s :: b2 -> length b1 = k ->
  bproj (fst (bw_emit st k s)) = after_select R (bproj st) b1 s b2 (Nat.min (cur s) (bx_rem st)).
Proof.
  intros st k s b1 b2 Hb Hk. unfold bw_emit, after_select, bproj; simpl.
  rewrite Hb, <- Hk, remove_at_split, replace_at_split. reflexivity.
Qed.

(** Every executable selection is a step of the relation. *)
Theorem bw_exec_select_refines : forall st k s,
  reach (bproj st) -> bw_pick st = Some (k, s) ->
  wstep R B A bmax alen (bproj st) (bproj (fst (bw_emit st k s))).
Proof.
  intros st k s H Hp.
  pose proof (bw_invariant R B A bmax alen HR0 HB1 bmax_pos _ H) as Hok.
  destruct (bw_pick_spec st k s Hp) as [Hn Hf].
  destruct (nth_error_split _ k Hn) as [b1 [b2 [Hb Hk]]].
  rewrite (bw_emit_proj st k s b1 b2 Hb Hk).
  assert (Hs : In s (bx_buf st)) by (apply (nth_error_In _ k Hn)).
  destruct (ok_spans _ _ _ _ _ _ Hok s Hs) as [_ [_ [Hc _]]].
  pose proof (ok_rem _ _ _ _ _ _ Hok) as Hr. unfold bproj in Hr; simpl in Hr.
  apply wstep_select; simpl; [exact Hb|lia|lia|lia|exact Hf].
Qed.

(** ** The driver. *)

Lemma arrive_n_fields : forall k st,
  bx_starts (bw_arrive_n k st) = bx_starts st /\ bx_emitted (bw_arrive_n k st) = bx_emitted st /\
  bx_row (bw_arrive_n k st) = bx_row st /\ bx_rem (bw_arrive_n k st) = bx_rem st.
Proof.
  induction k as [|k IH]; intros st; simpl; [repeat split|].
  destruct (bx_narr st <? length arr); [|repeat split].
  destruct (IH (bw_arrive st)) as [H1 [H2 [H3 H4]]].
  rewrite H1, H2, H3, H4. repeat split.
Qed.

Lemma refill_fields : forall st,
  bx_starts (bw_refill st) = bx_starts st /\ bx_emitted (bw_refill st) = bx_emitted st /\
  bx_row (bw_refill st) = bx_row st /\ bx_rem (bw_refill st) = bx_rem st.
Proof.
  unfold bw_refill. generalize (S (length arr)) as f.
  induction f as [|f IH]; intros st; simpl; [repeat split|].
  destruct (_ && _); [|repeat split].
  destruct (IH (bw_arrive_n (batch_size batches (bx_batch st)) (bw_next_batch st))) as [H1 [H2 [H3 H4]]].
  destruct (arrive_n_fields (batch_size batches (bx_batch st)) (bw_next_batch st)) as [G1 [G2 [G3 G4]]].
  rewrite H1, H2, H3, H4, G1, G2, G3, G4. repeat split.
Qed.

(** What the trace says about the state, kept along the run. *)
Definition trace_ok (st : bx) (acc : list event) : Prop :=
  bx_starts st = start_records acc /\
  bx_emitted st = emitted_sum acc /\
  (forall r, row_sum r acc =
             if r <? bx_row st then R else if r =? bx_row st then R - bx_rem st else 0).

Lemma trace_ok_refill : forall st acc, trace_ok st acc -> trace_ok (bw_refill st) acc.
Proof.
  intros st acc [H1 [H2 H3]]. destruct (refill_fields st) as [G1 [G2 [G3 G4]]].
  unfold trace_ok. rewrite G1, G2, G3, G4. split; [exact H1|split; [exact H2|exact H3]].
Qed.

Lemma trace_ok_emit : forall st acc k s,
  reach (bproj st) -> trace_ok st acc -> bw_pick st = Some (k, s) ->
  trace_ok (fst (bw_emit st k s)) (snd (bw_emit st k s) :: acc).
Proof.
  intros st acc k s H [H1 [H2 H3]] Hp.
  pose proof (bw_invariant R B A bmax alen HR0 HB1 bmax_pos _ H) as Hok.
  destruct (bw_pick_spec st k s Hp) as [Hn _].
  assert (Hs : In s (bx_buf st)) by (apply (nth_error_In _ k Hn)).
  destruct (ok_spans _ _ _ _ _ _ Hok s Hs) as [_ [_ [Hc Hco]]].
  pose proof (ok_rem _ _ _ _ _ _ Hok) as Hr. unfold bproj in Hr; simpl in Hr.
  unfold trace_ok, bw_emit; simpl. split; [|split].
  - unfold start_records in *; simpl.
    destruct (Nat.eqb_spec (cur s) (orig s)); destruct (Nat.eqb_spec (orig s - cur s) 0); try lia;
      simpl; rewrite H1; reflexivity.
  - rewrite H2; lia.
  - intros r. rewrite H3.
    destruct (Nat.eqb_spec (bx_rem st - Nat.min (cur s) (bx_rem st)) 0) as [E|E];
      repeat match goal with
             | |- context [?x <? ?y] => destruct (Nat.ltb_spec x y)
             | |- context [?x =? ?y] => destruct (Nat.eqb_spec x y)
             end; lia.
Qed.

Lemma bw_run_from_spec : forall fuel st acc,
  reach (bproj st) -> bx_narr st <= length arr -> trace_ok st acc ->
  reach (bproj (br_state (bw_run_from fuel st acc))) /\
  trace_ok (br_state (bw_run_from fuel st acc)) (rev (br_trace (bw_run_from fuel st acc))).
Proof.
  induction fuel as [|f IH]; intros st acc H Hn Ht; simpl.
  - rewrite rev_involutive. split; assumption.
  - destruct (bw_refill_reachable st H Hn) as [H1 Hn1].
    pose proof (trace_ok_refill st acc Ht) as Ht1.
    destruct (length (bx_buf (bw_refill st)) <? B); [simpl; rewrite rev_involutive; split; assumption|].
    destruct (bw_pick (bw_refill st)) as [[k s]|] eqn:Ep; [|simpl; rewrite rev_involutive; split; assumption].
    pose proof (bw_exec_select_refines _ k s H1 Ep) as Hs.
    pose proof (trace_ok_emit _ acc k s H1 Ht1 Ep) as Ht2.
    apply IH; [exact (wreach_step _ _ _ _ _ _ _ H1 Hs)|exact Hn1|exact Ht2].
Qed.

Lemma bw_run_spec : forall fuel,
  reach (bproj (br_state (bw_run fuel))) /\
  trace_ok (br_state (bw_run fuel)) (rev (br_trace (bw_run fuel))).
Proof.
  intros fuel. apply bw_run_from_spec; simpl.
  - apply wreach_init.
  - lia.
  - unfold trace_ok; simpl. split; [reflexivity|split; [reflexivity|]].
    intros r. destruct (Nat.ltb_spec r 0); [lia|]. destruct (Nat.eqb_spec r 0); lia.
Qed.

(** Every state [bw_run] produces, for any fuel, is reachable. *)
Theorem bw_run_reachable : forall fuel, reach (bproj (br_state (bw_run fuel))).
Proof. intros fuel; apply (bw_run_spec fuel). Qed.

(** The bound on the trace: the first event of an occurrence ([start = 0])
    is in a row at most [bw_delay_bound] rows after its arrival row. *)
Theorem bw_run_start_bound : forall fuel ev,
  In ev (br_trace (bw_run fuel)) -> ev_start ev = 0 ->
  ev_row ev <= nth (ev_occ ev) (bx_arows (br_state (bw_run fuel))) 0 + bw_delay_bound.
Proof.
  intros fuel ev Hin Hz. destruct (bw_run_spec fuel) as [H [Hs _]].
  apply (bw_start_bound R B A bmax alen HR0 HB1 bmax_pos _ (ev_occ ev) (ev_row ev) H).
  simpl. rewrite Hs. apply start_records_of; [apply in_rev; rewrite rev_involutive; exact Hin|exact Hz].
Qed.

(** An arrived occurrence absent from the trace is buffered whole, and the
    run is at most [bw_delay_bound] rows past its arrival row. *)
Theorem bw_run_unstarted_bound : forall fuel i,
  i < bx_narr (br_state (bw_run fuel)) -> ~ In i (map ev_occ (br_trace (bw_run fuel))) ->
  In (mkSpan i (arr_len arr i) (arr_len arr i)) (bx_buf (br_state (bw_run fuel))) /\
  bx_row (br_state (bw_run fuel)) <= nth i (bx_arows (br_state (bw_run fuel))) 0 + bw_delay_bound.
Proof.
  intros fuel i Hi Hns. destruct (bw_run_spec fuel) as [H [Hs _]].
  apply (bw_unstarted_bound R B A bmax alen HR0 HB1 bmax_pos _ i H Hi).
  simpl. rewrite Hs. intros Hin. apply Hns.
  apply in_map_iff in Hin. destruct Hin as [[i' r] [Heq Hin]]. simpl in Heq; subst i'.
  destruct (start_records_in _ _ _ Hin) as [ev [Hev [Ho _]]].
  apply in_map_iff. exists ev. split; [exact Ho|apply in_rev; exact Hev].
Qed.

(** No token is discarded: the arrived tokens are the emitted ones plus the buffered ones. *)
Theorem bw_run_conservation : forall fuel,
  sum_len (arr_len arr) (seq 0 (bx_narr (br_state (bw_run fuel)))) =
  emitted_sum (br_trace (bw_run fuel)) + mass (bx_buf (br_state (bw_run fuel))).
Proof.
  intros fuel. destruct (bw_run_spec fuel) as [H [_ [He _]]].
  rewrite <- emitted_sum_rev, <- He.
  apply (bw_conservation R B A bmax alen HR0 HB1 bmax_pos _ H).
Qed.

(** Rows are full: every row before the current one holds exactly [R]
    emitted tokens, the current one [R - rem], later ones none. *)
Theorem bw_run_rows_full : forall fuel,
  let st := br_state (bw_run fuel) in
  let tr := br_trace (bw_run fuel) in
  (forall r, r < bx_row st -> row_sum r tr = R) /\
  row_sum (bx_row st) tr = R - bx_rem st /\ 0 < bx_rem st <= R /\
  (forall r, bx_row st < r -> row_sum r tr = 0).
Proof.
  intros fuel st tr. destruct (bw_run_spec fuel) as [H [_ [_ Hr]]].
  pose proof (bw_rows_full R B A bmax alen HR0 HB1 bmax_pos _ H) as [_ Hrem].
  subst st tr. simpl in Hrem.
  split; [|split; [|split; [exact Hrem|]]].
  - intros r Hlt. rewrite <- row_sum_rev, Hr. destruct (Nat.ltb_spec r (bx_row (br_state (bw_run fuel)))); lia.
  - rewrite <- row_sum_rev, Hr, Nat.ltb_irrefl, Nat.eqb_refl. reflexivity.
  - intros r Hgt. rewrite <- row_sum_rev, Hr.
    destruct (Nat.ltb_spec r (bx_row (br_state (bw_run fuel)))); [lia|].
    destruct (Nat.eqb_spec r (bx_row (br_state (bw_run fuel)))); lia.
Qed.

End BWExec.

(** ** The bound is attained.

    [R = 4], [B = 3], refill batches of 2, [A = 1]: the bound is
    [1 + 3 + 2 - 2 = 4] rows.  Arrivals: a long span of 12 tokens (cropped
    first, its continuation fills rows 0..1 as the shortest span), one long
    span of 13, two 1-token spans (consumed in row 0, so the buffer drops to
    [B - 1 = 2] and the next batch of 2 arrives, still in row 0), then two
    more spans of 13.  From row [A + 1 = 2] on, one overdue span is forced per
    row, oldest first; occurrence 5 arrives in row 0 and starts in row 4.
    [tests/invariant/test_wait_bound.py] checks the same construction for a grid of
    settings. *)

Definition first_start_row (i : nat) (tr : list event) : option nat :=
  match filter (fun ev => (ev_occ ev =? i) && (ev_start ev =? 0)) tr with
  | ev :: _ => Some (ev_row ev)
  | [] => None
  end.

Definition tight_arr : list nat := [12; 13; 1; 1; 13; 13].

Theorem bw_bound_attained_example :
  let res := bw_run 4 3 1 [2] tight_arr 100 in
  nth 5 (bx_arows (br_state res)) 0 = 0 /\
  first_start_row 5 (br_trace res) = Some (0 + bw_delay_bound 3 1 [2]) /\
  bw_delay_bound 3 1 [2] = 4.
Proof. vm_compute. repeat split. Qed.
