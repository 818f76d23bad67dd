(** * KeyLemma: no legal selection picks an unchanged protected span.

    A protected span is long (original length > R).  If it is still
    unchanged, the fitting rule cannot take it.  If it were minimal by
    (current length, occurrence id), every other buffered span would be a
    distinct long arrived occurrence with a strictly larger key, so
    [|buffer| - 1 <= |larger_keys| < B - 1], contradicting
    [|buffer| >= B]. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs Semantics.

Section KeyLemma.

Variables (R B : nat) (len : nat -> nat).

Theorem key_lemma : forall st s,
  wf len st ->
  B <= length (buf st) ->
  In s (buf st) ->
  cur s = orig s ->
  selectable R (buf st) s ->
  ~ protected R B len (narr st) (sid s).
Proof.
  intros [n b h] s [Hb [Hi _]] HB Hin Hcur Hsel [Hlt [Hlong Hcnt]]; simpl in *.
  unfold long in Hlong.
  destruct (Hb s Hin) as [_ [Horig _]].
  destruct Hsel as [[c [Hc Hs]]|Hmin].
  - lia.
  - destruct (in_split s b Hin) as [b1 [b2 ->]].
    pose proof (incr_ids_NoDup _ Hi) as Hnd.
    rewrite map_app in Hnd; simpl in Hnd.
    pose proof (NoDup_remove_1 _ _ _ Hnd) as Hnd'.
    pose proof (NoDup_remove_2 _ _ _ Hnd) as Hnot.
    rewrite <- map_app in Hnd', Hnot.
    assert (Hincl : incl (map sid (b1 ++ b2)) (larger_keys R len n (sid s))).
    { intros j Hj. apply in_map_iff in Hj. destruct Hj as [t [<- Ht]].
      assert (Ht' : In t (b1 ++ s :: b2)).
      { apply in_app_or in Ht; apply in_or_app.
        destruct Ht as [Ht|Ht]; [left; exact Ht|right; right; exact Ht]. }
      destruct (Hb t Ht') as [Htn [Hto Htc]].
      assert (Hne : sid t <> sid s).
      { intros E; apply Hnot; rewrite <- E; apply in_map; exact Ht. }
      specialize (Hmin t Ht'); unfold lex_le in Hmin; simpl in Hmin.
      unfold larger_keys. apply filter_In; split.
      - apply in_seq; lia.
      - apply andb_true_iff; split.
        + unfold longb; apply Nat.ltb_lt; lia.
        + apply key_ltb_spec; unfold key_lt; simpl.
          destruct Hmin as [Hm|[Hm1 Hm2]]; lia. }
    pose proof (NoDup_incl_length Hnd' Hincl) as Hlen.
    rewrite map_length in Hlen.
    rewrite app_length in HB, Hlen; simpl in HB. lia.
Qed.

End KeyLemma.
