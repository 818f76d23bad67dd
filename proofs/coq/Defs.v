(** * Defs: spans, buffers, keys and the protected set.

    A span is one buffered occurrence: its occurrence id (the 0-based
    arrival index), its original BOS-inclusive length and its current
    length (which only differs from the original after a crop under the
    [continue] semantics).  The arrival stream is a function [len] from
    occurrence ids to original lengths; it is a section variable, so every
    definition below takes it as an explicit argument once the section
    is closed. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.

Record span : Type := mkSpan {
  sid  : nat;  (* occurrence id = arrival index *)
  orig : nat;  (* original length *)
  cur  : nat   (* current length *)
}.

Definition buffer : Type := list span.

(** Lexicographic strict order on keys (length, id). *)
Definition key_lt (a b : nat * nat) : Prop :=
  fst a < fst b \/ (fst a = fst b /\ snd a < snd b).

Definition key_ltb (a b : nat * nat) : bool :=
  (fst a <? fst b) || ((fst a =? fst b) && (snd a <? snd b)).

Lemma key_ltb_spec : forall a b, key_ltb a b = true <-> key_lt a b.
Proof.
  intros [a1 a2] [b1 b2]; unfold key_ltb, key_lt; simpl.
  rewrite orb_true_iff, andb_true_iff, Nat.ltb_lt, Nat.eqb_eq, Nat.ltb_lt.
  tauto.
Qed.

(** Lexicographic non-strict order on (current length, id), used by the
    fallback selection. *)
Definition lex_le (a b : nat * nat) : Prop :=
  fst a < fst b \/ (fst a = fst b /\ snd a <= snd b).

(** [s] is minimal in [b] by (current length, occurrence id). *)
Definition lexmin (b : buffer) (s : span) : Prop :=
  forall t, In t b -> lex_le (cur s, sid s) (cur t, sid t).

(** Buffered mass: sum of current lengths. *)
Fixpoint mass (b : buffer) : nat :=
  match b with
  | [] => 0
  | s :: t => cur s + mass t
  end.

(** Occurrence ids strictly increasing in buffer order. *)
Fixpoint incr_ids (b : buffer) : Prop :=
  match b with
  | [] => True
  | s :: t => (forall u, In u t -> sid s < sid u) /\ incr_ids t
  end.

Section Defs.

Variables (R B : nat) (len : nat -> nat).

(** Long = original length strictly greater than the row capacity. *)
Definition long (L : nat) : Prop := R < L.
Definition longb (L : nat) : bool := R <? L.

(** Long occurrences among the first [n] arrivals whose key (len j, j)
    is strictly larger than the key (len p, p). *)
Definition larger_keys (n p : nat) : list nat :=
  filter (fun j => longb (len j) && key_ltb (len p, p) (len j, j)) (seq 0 n).

(** The protected set, defined without sorting: after [n] arrivals an
    occurrence [p] is protected iff it has arrived, it is long, and fewer
    than [B - 1] long arrivals have a strictly larger key.  Keys are
    pairwise distinct, so this is exactly the set of the
    [min (B - 1) N_L] largest keys among long arrivals (proved in
    TopKeys.v: [protected_set_length], [protected_top],
    [top_keys_unique]). *)
Definition protected (n p : nat) : Prop :=
  p < n /\ long (len p) /\ length (larger_keys n p) < B - 1.

Definition protectedb (n p : nat) : bool :=
  (p <? n) && longb (len p) && (length (larger_keys n p) <? B - 1).

Definition protected_set (n : nat) : list nat := filter (protectedb n) (seq 0 n).

(** Number of long occurrences among the first [n] arrivals. *)
Definition long_count (n : nat) : nat :=
  length (filter (fun j => longb (len j)) (seq 0 n)).

(** Number of occurrences of original length at least [l] among the first
    [n] arrivals. *)
Definition count_ge (l n : nat) : nat :=
  length (filter (fun j => l <=? len j) (seq 0 n)).

(** The unchanged (unstarted) span of occurrence [p]. *)
Definition unchanged (p : nat) : span := mkSpan p (len p) (len p).

(** Sum of the original lengths of a list of occurrences. *)
Fixpoint sum_len (l : list nat) : nat :=
  match l with
  | [] => 0
  | i :: t => len i + sum_len t
  end.

Lemma protectedb_spec : forall n p, protectedb n p = true <-> protected n p.
Proof.
  intros n p; unfold protectedb, protected, long, longb.
  rewrite !andb_true_iff, !Nat.ltb_lt. tauto.
Qed.

Lemma protected_set_spec : forall n p, In p (protected_set n) <-> protected n p.
Proof.
  intros n p; unfold protected_set.
  rewrite filter_In, in_seq, protectedb_spec.
  split.
  - intros [_ H]; exact H.
  - intros H; split; [|exact H]. destruct H as [H _]; lia.
Qed.

Lemma protected_set_NoDup : forall n, NoDup (protected_set n).
Proof.
  intros n; unfold protected_set. apply NoDup_filter, seq_NoDup.
Qed.

End Defs.

(** ** Generic list facts used later. *)

Lemma incr_ids_app : forall b1 b2,
  incr_ids (b1 ++ b2) <->
  incr_ids b1 /\ incr_ids b2 /\ (forall x y, In x b1 -> In y b2 -> sid x < sid y).
Proof.
  induction b1 as [|s b1 IH]; intros b2; simpl.
  - split; [intros H; repeat split; auto; intros x y []|tauto].
  - rewrite IH. split.
    + intros [H1 [H2 [H3 H4]]].
      split; [split; [|exact H2]|split; [exact H3|]].
      * intros u Hu; apply H1; apply in_or_app; left; exact Hu.
      * intros x y [<-|Hx] Hy.
        -- apply H1; apply in_or_app; right; exact Hy.
        -- apply H4; assumption.
    + intros [[H1 H2] [H3 H4]].
      split; [|split; [exact H2|split; [exact H3|]]].
      * intros u Hu; apply in_app_or in Hu; destruct Hu as [Hu|Hu].
        -- apply H1; exact Hu.
        -- apply H4; [left; reflexivity|exact Hu].
      * intros x y Hx Hy; apply H4; [right; exact Hx|exact Hy].
Qed.

Lemma incr_ids_NoDup : forall b, incr_ids b -> NoDup (map sid b).
Proof.
  induction b as [|s b IH]; simpl; intros H.
  - constructor.
  - destruct H as [H1 H2]. constructor.
    + intros Hin. apply in_map_iff in Hin. destruct Hin as [u [Hu Hin]].
      specialize (H1 u Hin). lia.
    + apply IH; exact H2.
Qed.

Lemma incr_ids_unique : forall b x y,
  incr_ids b -> In x b -> In y b -> sid x = sid y -> x = y.
Proof.
  induction b as [|s b IH]; simpl; intros x y H Hx Hy Heq.
  - contradiction.
  - destruct H as [H1 H2].
    destruct Hx as [<-|Hx]; destruct Hy as [<-|Hy].
    + reflexivity.
    + specialize (H1 y Hy). lia.
    + specialize (H1 x Hx). lia.
    + apply (IH x y H2 Hx Hy Heq).
Qed.

Lemma filter_length_le : forall (f g : nat -> bool) (l : list nat),
  (forall x, In x l -> f x = true -> g x = true) ->
  length (filter f l) <= length (filter g l).
Proof.
  intros f g; induction l as [|a l IH]; simpl; intros H.
  - lia.
  - assert (IH' : length (filter f l) <= length (filter g l)).
    { apply IH; intros x Hx; apply H; right; exact Hx. }
    destruct (f a) eqn:Ef.
    + rewrite (H a (or_introl eq_refl) Ef); simpl; lia.
    + destruct (g a); simpl; lia.
Qed.

Lemma filter_length_lt : forall (f g : nat -> bool) (l : list nat) y,
  (forall x, In x l -> f x = true -> g x = true) ->
  In y l -> g y = true -> f y = false ->
  length (filter f l) < length (filter g l).
Proof.
  intros f g; induction l as [|a l IH]; simpl; intros y H Hy Gy Fy.
  - contradiction.
  - assert (Hle : length (filter f l) <= length (filter g l)).
    { apply filter_length_le; intros x Hx; apply H; right; exact Hx. }
    destruct Hy as [<-|Hy].
    + rewrite Fy, Gy; simpl; lia.
    + assert (IH' : length (filter f l) < length (filter g l)).
      { apply (IH y); auto. }
      destruct (f a) eqn:Ef.
      * rewrite (H a (or_introl eq_refl) Ef); simpl; lia.
      * destruct (g a); simpl; lia.
Qed.
