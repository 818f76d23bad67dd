(** * Invariant: protected occurrences are buffered, unchanged, unstarted.

    Main theorem [protected_invariant]: in every reachable state of the
    permissive relation, every protected occurrence [p] has its span
    [mkSpan p (len p) (len p)] in the buffer (present, current length =
    original length) and [p] is not in the started history (it was never
    selected).  The relation covers both continuation semantics. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs Semantics KeyLemma.

Section Invariant.

Variables (R B : nat) (len : nat -> nat).

Lemma larger_keys_succ : forall n p,
  length (larger_keys R len n p) <= length (larger_keys R len (S n) p).
Proof.
  intros n p; unfold larger_keys.
  rewrite seq_S, filter_app, app_length. lia.
Qed.

(** Protection can only be lost by new arrivals, never gained by old
    occurrences: protected after [S n] arrivals and arrived before the
    last one implies protected after [n] arrivals. *)
Lemma protected_succ : forall n p,
  protected R B len (S n) p -> p < n -> protected R B len n p.
Proof.
  intros n p [H1 [H2 H3]] Hp. split; [exact Hp|split; [exact H2|]].
  pose proof (larger_keys_succ n p). lia.
Qed.

Definition prot_ok (st : state) : Prop :=
  forall p, protected R B len (narr st) p ->
            In (unchanged len p) (buf st) /\ ~ In p (started st).

Lemma prot_ok_init : prot_ok init.
Proof.
  intros p [H _]; simpl in H; lia.
Qed.

Lemma prot_ok_step : forall st st',
  wf len st -> prot_ok st -> step R B len st st' -> prot_ok st'.
Proof.
  intros st st' Hwf Hok Hs.
  destruct Hs as [n b h|n b1 s b2 h HB Hsel|n b1 s b2 h c' HB Hsel Hc1 Hc2];
    unfold prot_ok in *; simpl in *.
  - intros p Hp.
    destruct (Nat.eq_dec p n) as [->|Hne].
    + split.
      * apply in_or_app; right; left; reflexivity.
      * intros Hin. destruct Hwf as [_ [_ Hh]]. specialize (Hh n Hin). simpl in Hh. lia.
    + assert (Hpn : p < n) by (destruct Hp as [Hp _]; lia).
      destruct (Hok p (protected_succ n p Hp Hpn)) as [Hin Hns].
      split; [apply in_or_app; left; exact Hin|exact Hns].
  - (* removal *)
    intros p Hp.
    destruct (Hok p Hp) as [Hin Hns].
    assert (Hne : sid s <> p).
    { intros E. subst p.
      assert (Hs : In s (b1 ++ s :: b2)) by (apply in_or_app; right; left; reflexivity).
      destruct Hwf as [Hb [Hi Hh]]; simpl in *.
      assert (Es : s = unchanged len (sid s)).
      { apply (incr_ids_unique _ _ _ Hi Hs Hin); reflexivity. }
      apply (key_lemma R B len (mkState n (b1 ++ s :: b2) h) s); simpl; auto.
      - split; [exact Hb|split; [exact Hi|exact Hh]].
      - rewrite Es; reflexivity. }
    split.
    + apply in_app_or in Hin; apply in_or_app.
      destruct Hin as [Hin|[E|Hin]]; [left; exact Hin| |right; exact Hin].
      exfalso; apply Hne; rewrite E; reflexivity.
    + intros [E|Hin']; [apply Hne; exact E|apply Hns; exact Hin'].
  - (* suffix kept in place *)
    intros p Hp.
    destruct (Hok p Hp) as [Hin Hns].
    assert (Hne : sid s <> p).
    { intros E. subst p.
      assert (Hs : In s (b1 ++ s :: b2)) by (apply in_or_app; right; left; reflexivity).
      destruct Hwf as [Hb [Hi Hh]]; simpl in *.
      assert (Es : s = unchanged len (sid s)).
      { apply (incr_ids_unique _ _ _ Hi Hs Hin); reflexivity. }
      apply (key_lemma R B len (mkState n (b1 ++ s :: b2) h) s); simpl; auto.
      - split; [exact Hb|split; [exact Hi|exact Hh]].
      - rewrite Es; reflexivity. }
    split.
    + apply in_app_or in Hin; apply in_or_app.
      destruct Hin as [Hin|[E|Hin]]; [left; exact Hin| |right; right; exact Hin].
      exfalso; apply Hne; rewrite E; reflexivity.
    + intros [E|Hin']; [apply Hne; exact E|apply Hns; exact Hin'].
Qed.

Lemma reachable_wf_prot_ok : forall st,
  reachable R B len st -> wf len st /\ prot_ok st.
Proof.
  intros st H; induction H as [|st st' H IH Hs].
  - split; [apply wf_init|apply prot_ok_init].
  - destruct IH as [Hwf Hok]. split.
    + apply (wf_step R B len st st' Hwf Hs).
    + apply (prot_ok_step st st' Hwf Hok Hs).
Qed.

(** The main theorem. *)
Theorem protected_invariant : forall st,
  reachable R B len st ->
  forall p, protected R B len (narr st) p ->
    In (mkSpan p (len p) (len p)) (buf st) /\ ~ In p (started st).
Proof.
  intros st H p Hp.
  destruct (reachable_wf_prot_ok st H) as [_ Hok].
  apply (Hok p Hp).
Qed.

(** The protected span is the only buffered span of that occurrence, so
    "in the buffer, unchanged" cannot be satisfied by a stale copy next to
    a started suffix. *)
Theorem protected_span_unique : forall st,
  reachable R B len st ->
  forall p s, protected R B len (narr st) p -> In s (buf st) -> sid s = p ->
    s = mkSpan p (len p) (len p).
Proof.
  intros st H p s Hp Hs Hid.
  destruct (reachable_wf_prot_ok st H) as [[_ [Hi _]] Hok].
  destruct (Hok p Hp) as [Hin _].
  apply (incr_ids_unique _ _ _ Hi Hs Hin). simpl; exact Hid.
Qed.

End Invariant.
