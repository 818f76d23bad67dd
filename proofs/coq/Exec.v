(** * Exec: the loader's actual deterministic rule, and its refinement.

    [select] implements the real selection rule for a row with [rem] free
    positions: take the LARGEST span with current length <= rem (ties:
    earliest in buffer order); if none fits, take the SHORTEST span (ties:
    earliest in buffer order) and emit its first [rem] tokens (a crop, the
    row is then full).  After a crop, policy [Discard] removes the span and
    policy [Continue] keeps the suffix at the same buffer position.

    [run] is the full driver: before EVERY selection it refills while fewer
    than [B] spans are buffered, one batch at a time, batch sizes taken in
    order from [batches] (cycled; an empty list or a size 0 counts as 1),
    a batch never taking more arrivals than remain; it stops at the first
    selection boundary where the buffer still holds fewer than [B] spans
    after refilling (arrivals exhausted), and records one event per
    selection.

    Refinement: every exec arrival and every exec selection is a step of
    the permissive relation of Semantics.v (instantiated with the stream
    [arr_len i = nth i arr 0]), so [run] only produces reachable states and
    all theorems of Invariant.v and Corollaries.v apply to the real rule
    ([run_reachable], [run_protected]). *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs Semantics KeyLemma Invariant.

Inductive policy : Type := Discard | Continue.

Record xstate : Type := mkX {
  xs_narr    : nat;       (* arrivals consumed so far *)
  xs_buf     : buffer;
  xs_started : list nat;  (* ids selected so far, most recent first *)
  xs_row     : nat;       (* index of the row being filled *)
  xs_rem     : nat;       (* free positions left in that row *)
  xs_batch   : nat        (* number of refill batches taken so far *)
}.

(** One selection: row, offset in the row, occurrence, source offset of
    the first emitted token, number of emitted tokens, crop flag. *)
Record event : Type := mkEv {
  ev_row     : nat;
  ev_offset  : nat;
  ev_occ     : nat;
  ev_start   : nat;
  ev_emitted : nat;
  ev_crop    : bool
}.

Inductive stop_reason : Type := Exhausted | OutOfFuel | NoSpan.

Record result : Type := mkRes {
  res_state : xstate;
  res_trace : list event;
  res_stop  : stop_reason
}.

(** Largest span with [cur <= rem]; ties go to the earliest. *)
Fixpoint best_fit (rem : nat) (b : buffer) : option (nat * span) :=
  match b with
  | [] => None
  | s :: t =>
      match best_fit rem t with
      | Some (k, u) =>
          if (cur s <=? rem) && (cur u <=? cur s) then Some (0, s) else Some (S k, u)
      | None => if cur s <=? rem then Some (0, s) else None
      end
  end.

(** Shortest span; ties go to the earliest. *)
Fixpoint shortest (b : buffer) : option (nat * span) :=
  match b with
  | [] => None
  | s :: t =>
      match shortest t with
      | Some (k, u) => if cur u <? cur s then Some (S k, u) else Some (0, s)
      | None => Some (0, s)
      end
  end.

Definition remove_at (k : nat) (b : buffer) : buffer := firstn k b ++ skipn (S k) b.

Definition replace_at (k : nat) (x : span) (b : buffer) : buffer :=
  firstn k b ++ x :: skipn (S k) b.

(** ** Specification of the two choice functions. *)

Lemma best_fit_some : forall rem b k s,
  best_fit rem b = Some (k, s) ->
  nth_error b k = Some s /\ cur s <= rem /\
  (forall t, In t b -> cur t <= rem -> cur t <= cur s) /\
  (forall j t, j < k -> nth_error b j = Some t -> cur t <= rem -> cur t < cur s).
Proof.
  intros rem; induction b as [|x b IH]; intros k s H; simpl in H.
  - discriminate.
  - destruct (best_fit rem b) as [[k' u]|] eqn:E.
    + destruct (IH k' u eq_refl) as [H1 [H2 [H3 H4]]].
      destruct ((cur x <=? rem) && (cur u <=? cur x)) eqn:C.
      * apply andb_true_iff in C; destruct C as [C1 C2].
        apply Nat.leb_le in C1; apply Nat.leb_le in C2.
        injection H as <- <-. simpl.
        split; [reflexivity|split; [exact C1|split]].
        -- intros t [<-|Ht] Hf; [lia|]. specialize (H3 t Ht Hf); lia.
        -- intros j t Hj; lia.
      * injection H as <- <-. simpl.
        split; [exact H1|split; [exact H2|split]].
        -- intros t [<-|Ht] Hf; [|apply H3; assumption].
           apply andb_false_iff in C; destruct C as [C|C];
             [apply Nat.leb_nle in C; lia|apply Nat.leb_nle in C; lia].
        -- intros [|j] t Hj Ht Hf; simpl in Ht.
           ++ injection Ht as <-.
              apply andb_false_iff in C; destruct C as [C|C];
                [apply Nat.leb_nle in C; lia|apply Nat.leb_nle in C; lia].
           ++ apply (H4 j t); [lia|exact Ht|exact Hf].
    + destruct (cur x <=? rem) eqn:C; [|discriminate].
      apply Nat.leb_le in C. injection H as <- <-. simpl.
      split; [reflexivity|split; [exact C|split]].
      * intros t [<-|Ht] Hf; [lia|].
        exfalso. clear IH. revert E t Ht Hf.
        (* no span of [b] fits *)
        assert (Hnone : forall b', best_fit rem b' = None -> forall t, In t b' -> rem < cur t).
        { induction b' as [|y b' IHb']; simpl; intros Eb t Ht; [contradiction|].
          destruct (best_fit rem b') as [[? ?]|] eqn:Eb'.
          - destruct ((cur y <=? rem) && _); discriminate.
          - destruct (cur y <=? rem) eqn:Cy; [discriminate|].
            destruct Ht as [<-|Ht]; [apply Nat.leb_nle in Cy; lia|].
            apply IHb'; auto. }
        intros E t Ht Hf. specialize (Hnone b E t Ht). lia.
      * intros j t Hj; lia.
Qed.

Lemma best_fit_none : forall rem b,
  best_fit rem b = None -> forall t, In t b -> rem < cur t.
Proof.
  intros rem; induction b as [|y b IH]; simpl; intros Eb t Ht; [contradiction|].
  destruct (best_fit rem b) as [[? ?]|] eqn:Eb'.
  - destruct ((cur y <=? rem) && _); discriminate.
  - destruct (cur y <=? rem) eqn:Cy; [discriminate|].
    destruct Ht as [<-|Ht]; [apply Nat.leb_nle in Cy; lia|].
    apply IH; auto.
Qed.

Lemma shortest_some : forall b k s,
  shortest b = Some (k, s) ->
  nth_error b k = Some s /\
  (forall t, In t b -> cur s <= cur t) /\
  (forall j t, j < k -> nth_error b j = Some t -> cur s < cur t).
Proof.
  induction b as [|x b IH]; intros k s H; simpl in H.
  - discriminate.
  - destruct (shortest b) as [[k' u]|] eqn:E.
    + destruct (IH k' u eq_refl) as [H1 [H2 H3]].
      destruct (cur u <? cur x) eqn:C.
      * apply Nat.ltb_lt in C. injection H as <- <-. simpl.
        split; [exact H1|split].
        -- intros t [<-|Ht]; [lia|apply H2; exact Ht].
        -- intros [|j] t Hj Ht; simpl in Ht.
           ++ injection Ht as <-; lia.
           ++ apply (H3 j t); [lia|exact Ht].
      * apply Nat.ltb_nlt in C. injection H as <- <-. simpl.
        split; [reflexivity|split].
        -- intros t [<-|Ht]; [lia|]. specialize (H2 t Ht); lia.
        -- intros j t Hj; lia.
    + injection H as <- <-. simpl.
      split; [reflexivity|split].
      * intros t [<-|Ht]; [lia|].
        destruct b; [contradiction|simpl in E].
        destruct (shortest b) as [[? ?]|]; [destruct (_ <? _)|]; discriminate.
      * intros j t Hj; lia.
Qed.

Lemma shortest_none : forall b, shortest b = None -> b = [].
Proof.
  intros [|x b] H; [reflexivity|simpl in H].
  destruct (shortest b) as [[? ?]|]; [destruct (_ <? _)|]; discriminate.
Qed.

(** With ids increasing in buffer order, "shortest, ties earliest" is the
    minimum by (current length, occurrence id). *)
Lemma shortest_lexmin : forall b k s,
  incr_ids b -> shortest b = Some (k, s) -> lexmin b s.
Proof.
  induction b as [|x b IH]; intros k s Hi H; simpl in H.
  - discriminate.
  - destruct Hi as [Hx Hi].
    destruct (shortest b) as [[k' u]|] eqn:E.
    + pose proof (IH k' u Hi eq_refl) as Hu.
      destruct (shortest_some b k' u E) as [Hn [Hle _]].
      destruct (cur u <? cur x) eqn:C.
      * apply Nat.ltb_lt in C. injection H as <- <-.
        intros t [<-|Ht]; [left; simpl; exact C|apply Hu; exact Ht].
      * apply Nat.ltb_nlt in C. injection H as <- <-.
        intros t [<-|Ht]; unfold lex_le; simpl.
        -- right; split; reflexivity.
        -- specialize (Hle t Ht). specialize (Hx t Ht).
           destruct (Nat.eq_dec (cur x) (cur t)); [right; lia|left; lia].
    + apply shortest_none in E; subst b. injection H as <- <-.
      intros t [<-|[]]; unfold lex_le; right; split; reflexivity.
Qed.

Lemma remove_at_split : forall l1 s l2,
  remove_at (length l1) (l1 ++ s :: l2) = l1 ++ l2.
Proof.
  intros l1 s l2; unfold remove_at.
  rewrite firstn_app, firstn_all, Nat.sub_diag, app_nil_r.
  rewrite skipn_app, skipn_all2 by lia.
  replace (S (length l1) - length l1) with 1 by lia. reflexivity.
Qed.

Lemma replace_at_split : forall l1 s x l2,
  replace_at (length l1) x (l1 ++ s :: l2) = l1 ++ x :: l2.
Proof.
  intros l1 s x l2; unfold replace_at.
  rewrite firstn_app, firstn_all, Nat.sub_diag, app_nil_r.
  rewrite skipn_app, skipn_all2 by lia.
  replace (S (length l1) - length l1) with 1 by lia. reflexivity.
Qed.

Section Exec.

Variables (pol : policy) (R B : nat) (batches arr : list nat).

(** The arrival stream seen by the relation. *)
Definition arr_len (i : nat) : nat := nth i arr 0.

Definition arrive (st : xstate) : xstate :=
  mkX (S (xs_narr st))
      (xs_buf st ++ [mkSpan (xs_narr st) (arr_len (xs_narr st)) (arr_len (xs_narr st))])
      (xs_started st) (xs_row st) (xs_rem st) (xs_batch st).

(** Append up to [k] arrivals (fewer if the stream runs out). *)
Fixpoint arrive_n (k : nat) (st : xstate) : xstate :=
  match k with
  | 0 => st
  | S k' => if xs_narr st <? length arr then arrive_n k' (arrive st) else st
  end.

Definition batch_size (j : nat) : nat :=
  match batches with
  | [] => 1
  | _ :: _ => Nat.max 1 (nth (j mod length batches) batches 1)
  end.

Definition next_batch (st : xstate) : xstate :=
  mkX (xs_narr st) (xs_buf st) (xs_started st) (xs_row st) (xs_rem st) (S (xs_batch st)).

Fixpoint refill_loop (fuel : nat) (st : xstate) : xstate :=
  match fuel with
  | 0 => st
  | S f =>
      if (length (xs_buf st) <? B) && (xs_narr st <? length arr)
      then refill_loop f (arrive_n (batch_size (xs_batch st)) (next_batch st))
      else st
  end.

(** Each batch takes at least one arrival, so [S (length arr)] rounds
    suffice (see [refill_post]). *)
Definition refill (st : xstate) : xstate := refill_loop (S (length arr)) st.

Lemma batch_size_pos : forall j, 1 <= batch_size j.
Proof.
  intros j; unfold batch_size; destruct batches; lia.
Qed.

Lemma arrive_n_narr : forall k st,
  xs_narr st <= length arr ->
  (xs_narr st <= xs_narr (arrive_n k st) <= length arr) /\
  (1 <= k -> xs_narr st < length arr -> xs_narr st < xs_narr (arrive_n k st)).
Proof.
  induction k as [|k IH]; intros st H; simpl.
  - split; [lia|intros; lia].
  - destruct (xs_narr st <? length arr) eqn:E.
    + apply Nat.ltb_lt in E.
      destruct (IH (arrive st)) as [H1 _]; [simpl; lia|].
      simpl in H1. split; [lia|intros; lia].
    + apply Nat.ltb_nlt in E. split; [lia|intros; lia].
Qed.

(** Refill postcondition: after [refill], either at least [B] spans are
    buffered or the arrivals are exhausted. *)
Lemma refill_loop_post : forall f st,
  xs_narr st <= length arr -> length arr < f + xs_narr st ->
  B <= length (xs_buf (refill_loop f st)) \/ xs_narr (refill_loop f st) = length arr.
Proof.
  induction f as [|f IH]; intros st H1 H2; simpl; [lia|].
  destruct ((length (xs_buf st) <? B) && (xs_narr st <? length arr)) eqn:C.
  - apply andb_true_iff in C; destruct C as [_ C]; apply Nat.ltb_lt in C.
    destruct (arrive_n_narr (batch_size (xs_batch st)) (next_batch st)) as [[Ha Hb] Hc];
      [simpl; lia|].
    specialize (Hc (batch_size_pos _) ltac:(simpl; lia)). simpl in Hc.
    apply IH; lia.
  - apply andb_false_iff in C; destruct C as [C|C].
    + apply Nat.ltb_nlt in C; left; lia.
    + apply Nat.ltb_nlt in C; right; lia.
Qed.

Theorem refill_post : forall st,
  xs_narr st <= length arr ->
  B <= length (xs_buf (refill st)) \/ xs_narr (refill st) = length arr.
Proof.
  intros st H; unfold refill; apply refill_loop_post; [exact H|lia].
Qed.

Definition select (st : xstate) : option (xstate * event) :=
  let b := xs_buf st in
  let rem := xs_rem st in
  match best_fit rem b with
  | Some (k, s) =>
      let ev := mkEv (xs_row st) (R - rem) (sid s) (orig s - cur s) (cur s) false in
      let h' := sid s :: xs_started st in
      if rem - cur s =? 0
      then Some (mkX (xs_narr st) (remove_at k b) h' (S (xs_row st)) R (xs_batch st), ev)
      else Some (mkX (xs_narr st) (remove_at k b) h' (xs_row st) (rem - cur s) (xs_batch st), ev)
  | None =>
      match shortest b with
      | Some (k, s) =>
          let ev := mkEv (xs_row st) (R - rem) (sid s) (orig s - cur s) rem true in
          let b' := match pol with
                    | Discard => remove_at k b
                    | Continue => replace_at k (mkSpan (sid s) (orig s) (cur s - rem)) b
                    end in
          Some (mkX (xs_narr st) b' (sid s :: xs_started st) (S (xs_row st)) R (xs_batch st), ev)
      | None => None
      end
  end.

Fixpoint run_from (fuel : nat) (st : xstate) (acc : list event) : result :=
  match fuel with
  | 0 => mkRes st (rev acc) OutOfFuel
  | S f =>
      let st1 := refill st in
      if length (xs_buf st1) <? B then mkRes st1 (rev acc) Exhausted
      else match select st1 with
           | Some (st2, ev) => run_from f st2 (ev :: acc)
           | None => mkRes st1 (rev acc) NoSpan
           end
  end.

Definition xinit : xstate := mkX 0 [] [] 0 R 0.

Definition run (fuel : nat) : result := run_from fuel xinit [].

(** ** Refinement. *)

Definition proj (st : xstate) : state := mkState (xs_narr st) (xs_buf st) (xs_started st).

Definition rem_ok (st : xstate) : Prop := 0 < xs_rem st <= R.

Theorem exec_arrive_refines : forall st,
  step R B arr_len (proj st) (proj (arrive st)).
Proof.
  intros [n b h row rem bt]; unfold proj, arrive; simpl. apply step_arrive.
Qed.

Lemma arrive_n_reachable : forall k st,
  reachable R B arr_len (proj st) ->
  reachable R B arr_len (proj (arrive_n k st)) /\ xs_rem (arrive_n k st) = xs_rem st.
Proof.
  induction k as [|k IH]; intros st H; simpl; [split; [exact H|reflexivity]|].
  destruct (xs_narr st <? length arr); [|split; [exact H|reflexivity]].
  destruct (IH (arrive st)) as [H1 H2].
  - apply (reach_step _ _ _ _ _ H (exec_arrive_refines st)).
  - split; [exact H1|rewrite H2; reflexivity].
Qed.

Lemma refill_loop_reachable : forall f st,
  reachable R B arr_len (proj st) -> rem_ok st ->
  reachable R B arr_len (proj (refill_loop f st)) /\ rem_ok (refill_loop f st).
Proof.
  induction f as [|f IH]; intros st H Hr; simpl; [split; assumption|].
  destruct ((length (xs_buf st) <? B) && (xs_narr st <? length arr)); [|split; assumption].
  apply IH.
  - destruct (arrive_n_reachable (batch_size (xs_batch st)) (next_batch st)) as [H1 _];
      [destruct st; exact H|exact H1].
  - destruct (arrive_n_reachable (batch_size (xs_batch st)) (next_batch st)) as [_ H2];
      [destruct st; exact H|].
    unfold rem_ok; rewrite H2; destruct st; exact Hr.
Qed.

Lemma refill_reachable : forall st,
  reachable R B arr_len (proj st) -> rem_ok st ->
  reachable R B arr_len (proj (refill st)) /\ rem_ok (refill st).
Proof. intros st; apply refill_loop_reachable. Qed.

Lemma step_take_at : forall n b h k s,
  nth_error b k = Some s -> B <= length b -> selectable R b s ->
  step R B arr_len (mkState n b h) (mkState n (remove_at k b) (sid s :: h)).
Proof.
  intros n b h k s Hn HB Hs.
  destruct (nth_error_split b k Hn) as [l1 [l2 [-> <-]]].
  rewrite remove_at_split. apply step_take; assumption.
Qed.

Lemma step_keep_at : forall n b h k s c',
  nth_error b k = Some s -> B <= length b -> selectable R b s ->
  0 < c' -> c' < cur s ->
  step R B arr_len (mkState n b h)
       (mkState n (replace_at k (mkSpan (sid s) (orig s) c') b) (sid s :: h)).
Proof.
  intros n b h k s c' Hn HB Hs H1 H2.
  destruct (nth_error_split b k Hn) as [l1 [l2 [-> <-]]].
  rewrite replace_at_split. apply step_keep; assumption.
Qed.

(** Every exec selection (at a boundary with at least [B] buffered spans
    and [0 < rem <= R]) is a step of the relation. *)
Theorem exec_select_refines : forall st st' ev,
  reachable R B arr_len (proj st) ->
  rem_ok st ->
  B <= length (xs_buf st) ->
  select st = Some (st', ev) ->
  step R B arr_len (proj st) (proj st') /\ rem_ok st' /\
  xs_started st' = ev_occ ev :: xs_started st.
Proof.
  intros [n b h row rem bt] st' ev H [Hr1 Hr2] HB Hsel; simpl in *.
  unfold select in Hsel; simpl in Hsel.
  destruct (best_fit rem b) as [[k s]|] eqn:Ef.
  - destruct (best_fit_some rem b k s Ef) as [Hn [Hfit _]].
    assert (Hstep : step R B arr_len (mkState n b h) (mkState n (remove_at k b) (sid s :: h))).
    { apply step_take_at; auto. left; exists rem; split; assumption. }
    destruct (rem - cur s =? 0) eqn:Ez; injection Hsel as <- <-; unfold proj, rem_ok; simpl.
    + split; [exact Hstep|split; [lia|reflexivity]].
    + apply Nat.eqb_neq in Ez. split; [exact Hstep|split; [lia|reflexivity]].
  - destruct (shortest b) as [[k s]|] eqn:Es; [|discriminate].
    destruct (shortest_some b k s Es) as [Hn _].
    assert (Hin : In s b) by (apply (nth_error_In b k Hn)).
    assert (Hbig : rem < cur s) by (apply (best_fit_none rem b Ef s Hin)).
    destruct (reachable_wf R B arr_len _ H) as [_ [Hi _]]; simpl in Hi.
    assert (Hsel' : selectable R b s) by (right; apply (shortest_lexmin b k s Hi Es)).
    destruct pol; injection Hsel as <- <-; unfold proj, rem_ok; simpl.
    + split; [apply step_take_at; auto|split; [lia|reflexivity]].
    + split; [apply step_keep_at; auto; lia|split; [lia|reflexivity]].
Qed.

Lemma run_from_reachable : forall fuel st acc,
  reachable R B arr_len (proj st) -> rem_ok st ->
  reachable R B arr_len (proj (res_state (run_from fuel st acc))).
Proof.
  induction fuel as [|f IH]; intros st acc H Hr; simpl; [exact H|].
  destruct (refill_reachable st H Hr) as [H1 Hr1].
  destruct (length (xs_buf (refill st)) <? B) eqn:EB; [exact H1|].
  apply Nat.ltb_nlt in EB.
  destruct (select (refill st)) as [[st2 ev]|] eqn:Es; [|exact H1].
  destruct (exec_select_refines (refill st) st2 ev H1 Hr1 ltac:(lia) Es) as [Hs [Hr2 _]].
  apply IH; [apply (reach_step _ _ _ _ _ H1 Hs)|exact Hr2].
Qed.

Lemma run_from_started : forall fuel st acc h0,
  xs_started st = map ev_occ acc ++ h0 ->
  xs_started (res_state (run_from fuel st acc)) =
    map ev_occ (rev (res_trace (run_from fuel st acc))) ++ h0.
Proof.
  assert (Hrefill : forall f st, xs_started (refill_loop f st) = xs_started st).
  { induction f as [|f IH]; intros st; simpl; [reflexivity|].
    destruct (_ && _); [|reflexivity].
    rewrite IH.
    assert (Ha : forall k st', xs_started (arrive_n k st') = xs_started st').
    { induction k as [|k IHk]; intros st'; simpl; [reflexivity|].
      destruct (_ <? _); [rewrite IHk; reflexivity|reflexivity]. }
    rewrite Ha; reflexivity. }
  induction fuel as [|f IH]; intros st acc h0 H; simpl.
  - rewrite rev_involutive; exact H.
  - destruct (length (xs_buf (refill st)) <? B).
    + simpl. rewrite rev_involutive. unfold refill; rewrite Hrefill; exact H.
    + destruct (select (refill st)) as [[st2 ev]|] eqn:Es.
      * apply IH. simpl.
        (* the selection pushes the selected id *)
        unfold select in Es.
        destruct (best_fit (xs_rem (refill st)) (xs_buf (refill st))) as [[k s]|].
        -- destruct (_ =? 0); injection Es as <- <-; simpl;
             unfold refill; rewrite Hrefill, H; reflexivity.
        -- destruct (shortest (xs_buf (refill st))) as [[k s]|]; [|discriminate].
           injection Es as <- <-; simpl; unfold refill; rewrite Hrefill, H; reflexivity.
      * simpl. rewrite rev_involutive. unfold refill; rewrite Hrefill; exact H.
Qed.

(** [run] only produces reachable states (for every amount of fuel, hence
    at every selection boundary it passes). *)
Theorem run_reachable : forall fuel,
  0 < R -> reachable R B arr_len (proj (res_state (run fuel))).
Proof.
  intros fuel HR. apply run_from_reachable.
  - unfold xinit, proj; simpl. apply reach_init.
  - unfold rem_ok, xinit; simpl; lia.
Qed.

(** The started history of [run] is exactly the list of selected
    occurrences of its trace. *)
Theorem run_started_trace : forall fuel,
  xs_started (res_state (run fuel)) = map ev_occ (rev (res_trace (run fuel))).
Proof.
  intros fuel. unfold run.
  rewrite (run_from_started fuel xinit [] []); [apply app_nil_r|reflexivity].
Qed.

(** The main theorem applied to the real rule: in the final state of any
    run, every protected occurrence is buffered unchanged and does not
    occur in the emitted trace. *)
Theorem run_protected : forall fuel p,
  0 < R ->
  protected R B arr_len (xs_narr (res_state (run fuel))) p ->
  In (mkSpan p (arr_len p) (arr_len p)) (xs_buf (res_state (run fuel))) /\
  ~ In p (map ev_occ (res_trace (run fuel))).
Proof.
  intros fuel p HR Hp.
  destruct (protected_invariant R B arr_len _ (run_reachable fuel HR) p Hp) as [Hin Hns].
  split; [exact Hin|].
  intros Ht. apply Hns. simpl. rewrite run_started_trace.
  rewrite map_rev. apply in_rev. rewrite rev_involutive. exact Ht.
Qed.

End Exec.
