(** * TopKeys: the sort-free protected set is the set of the largest keys.

    [protected] (Defs.v) is defined without sorting: after [n] arrivals,
    [p] is protected iff [p < n], [p] is long and fewer than [B - 1] long
    arrivals have a strictly larger key [(len j, j)].  This file proves
    that this is exactly the set of the [min (B - 1) N_L] largest keys
    among the long arrivals, where [N_L = long_count R len n]:

    - [protected_set_length]: the protected set has exactly
      [min (B - 1) N_L] elements;
    - [protected_top]: every long arrival that is not protected has a
      strictly smaller key than every protected occurrence;
    - [protected_upward_closed]: a long arrival with a larger key than a
      protected occurrence is itself protected;
    - [top_keys_unique]: any duplicate-free list of long arrivals with
      [min (B - 1) N_L] elements and the top property of
      [protected_top] has exactly the protected occurrences as members.

    Keys are pairwise distinct because ids are ([key_trichotomy]), so
    "the [k] largest keys" is well defined.  The proof works with the
    rank [rank n p = length (larger_keys R len n p)] (the number of long
    arrivals with a larger key): it is injective on long arrivals and
    below [N_L], so the protected occurrences (rank [< B - 1]) and the
    unprotected long arrivals (rank [>= B - 1]) are counted by two
    pigeonhole bounds whose sum is [N_L]. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs.

(** ** Generic list facts *)

Lemma map_NoDup_inj_on : forall (f : nat -> nat) (l : list nat),
  NoDup l ->
  (forall x y, In x l -> In y l -> f x = f y -> x = y) ->
  NoDup (map f l).
Proof.
  intros f; induction l as [|a l IH]; simpl; intros Hnd Hinj.
  - constructor.
  - inversion Hnd as [|a' l' Hnot Hnd' E]; subst.
    constructor.
    + intros Hin. apply in_map_iff in Hin. destruct Hin as [x [Hx Hin]].
      assert (Ex : x = a) by (apply Hinj; [right; exact Hin|left; reflexivity|exact Hx]).
      apply Hnot. rewrite <- Ex. exact Hin.
    + apply IH; [exact Hnd'|].
      intros x y Hx Hy Hf. apply Hinj; [right; exact Hx|right; exact Hy|exact Hf].
Qed.

(** Pigeonhole: an injection of a duplicate-free list into the interval
    [[a, a + k)] has at most [k] elements. *)
Lemma inj_range_length : forall (f : nat -> nat) (l : list nat) a k,
  NoDup l ->
  (forall x y, In x l -> In y l -> f x = f y -> x = y) ->
  (forall x, In x l -> a <= f x /\ f x < a + k) ->
  length l <= k.
Proof.
  intros f l a k Hnd Hinj Hr.
  rewrite <- (map_length f l), <- (seq_length k a).
  apply NoDup_incl_length; [apply map_NoDup_inj_on; assumption|].
  intros i Hi. apply in_map_iff in Hi. destruct Hi as [x [<- Hx]].
  apply in_seq. exact (Hr x Hx).
Qed.

(** Splitting [filter f l] into the elements that satisfy [g] and the
    others, when [g] implies [f] on [l]. *)
Lemma filter_split_length : forall (f g : nat -> bool) (l : list nat),
  (forall x, In x l -> g x = true -> f x = true) ->
  length (filter g l) + length (filter (fun x => f x && negb (g x)) l)
  = length (filter f l).
Proof.
  intros f g; induction l as [|a l IH]; simpl; intros H.
  - reflexivity.
  - assert (IH' := IH (fun x Hx Hg => H x (or_intror Hx) Hg)).
    destruct (g a) eqn:Eg.
    + rewrite (H a (or_introl eq_refl) Eg); simpl. lia.
    + destruct (f a); simpl; lia.
Qed.

(** ** Keys *)

Lemma key_lt_irrefl : forall k, ~ key_lt k k.
Proof. intros [a b]; unfold key_lt; simpl; lia. Qed.

Lemma key_lt_trans : forall a b c, key_lt a b -> key_lt b c -> key_lt a c.
Proof. intros [a1 a2] [b1 b2] [c1 c2]; unfold key_lt; simpl; lia. Qed.

Lemma key_lt_asym : forall a b, key_lt a b -> ~ key_lt b a.
Proof. intros [a1 a2] [b1 b2]; unfold key_lt; simpl; lia. Qed.

Lemma key_ltb_irrefl : forall k, key_ltb k k = false.
Proof.
  intros k. destruct (key_ltb k k) eqn:E; [|reflexivity].
  apply key_ltb_spec in E. exfalso; exact (key_lt_irrefl _ E).
Qed.

Section TopKeys.

Variables (R B : nat) (len : nat -> nat).

(** Keys of distinct occurrences are distinct, hence comparable. *)
Lemma key_trichotomy : forall p q,
  p <> q -> key_lt (len p, p) (len q, q) \/ key_lt (len q, q) (len p, p).
Proof. intros p q H; unfold key_lt; simpl; lia. Qed.

(** The rank of [p]: the number of long arrivals with a larger key. *)
Definition rank (n p : nat) : nat := length (larger_keys R len n p).

Lemma protected_rank : forall n p,
  protected R B len n p <-> p < n /\ long R (len p) /\ rank n p < B - 1.
Proof. intros n p; unfold protected, rank; tauto. Qed.

Lemma rank_lt_long_count : forall n p,
  p < n -> long R (len p) -> rank n p < long_count R len n.
Proof.
  intros n p Hp Hl; unfold rank, larger_keys, long_count.
  apply (filter_length_lt _ _ _ p).
  - intros x _ Hx. apply andb_true_iff in Hx. exact (proj1 Hx).
  - apply in_seq; lia.
  - unfold longb, long in *. apply Nat.ltb_lt; exact Hl.
  - rewrite key_ltb_irrefl. apply andb_false_r.
Qed.

(** A larger key has a strictly smaller rank. *)
Lemma rank_lt_of_key_lt : forall n p q,
  q < n -> long R (len q) -> key_lt (len p, p) (len q, q) -> rank n q < rank n p.
Proof.
  intros n p q Hq Hl Hk; unfold rank, larger_keys.
  apply (filter_length_lt _ _ _ q).
  - intros x _ Hx. apply andb_true_iff in Hx. destruct Hx as [Hx1 Hx2].
    apply andb_true_iff; split; [exact Hx1|].
    apply key_ltb_spec in Hx2. apply key_ltb_spec.
    exact (key_lt_trans _ _ _ Hk Hx2).
  - apply in_seq; lia.
  - apply andb_true_iff; split.
    + unfold longb, long in *. apply Nat.ltb_lt; exact Hl.
    + apply key_ltb_spec; exact Hk.
  - rewrite key_ltb_irrefl. apply andb_false_r.
Qed.

Lemma rank_inj : forall n p q,
  p < n -> q < n -> long R (len p) -> long R (len q) ->
  rank n p = rank n q -> p = q.
Proof.
  intros n p q Hp Hq Hlp Hlq E.
  destruct (Nat.eq_dec p q) as [Hpq|Hpq]; [exact Hpq|].
  exfalso.
  destruct (key_trichotomy p q Hpq) as [Hk|Hk].
  - pose proof (rank_lt_of_key_lt n p q Hq Hlq Hk). lia.
  - pose proof (rank_lt_of_key_lt n q p Hp Hlp Hk). lia.
Qed.

(** ** Top-ness *)

Theorem protected_upward_closed : forall n p q,
  protected R B len n p -> q < n -> long R (len q) ->
  key_lt (len p, p) (len q, q) -> protected R B len n q.
Proof.
  intros n p q Hp Hq Hl Hk.
  apply protected_rank in Hp. destruct Hp as [_ [_ Hr]].
  apply protected_rank. split; [exact Hq|split; [exact Hl|]].
  pose proof (rank_lt_of_key_lt n p q Hq Hl Hk). unfold rank in *. lia.
Qed.

Theorem protected_top : forall n p q,
  protected R B len n p -> q < n -> long R (len q) ->
  ~ protected R B len n q -> key_lt (len q, q) (len p, p).
Proof.
  intros n p q Hp Hq Hl Hnq.
  destruct (Nat.eq_dec q p) as [E|Hne].
  - subst q. contradiction.
  - destruct (key_trichotomy q p Hne) as [Hk|Hk]; [exact Hk|].
    exfalso. apply Hnq. exact (protected_upward_closed n p q Hp Hq Hl Hk).
Qed.

(** ** Cardinality *)

Theorem protected_set_length : forall n,
  length (protected_set R B len n) = Nat.min (B - 1) (long_count R len n).
Proof.
  intros n.
  set (N := long_count R len n).
  set (Q := filter (fun j => longb R (len j) && negb (protectedb R B len n j)) (seq 0 n)).
  (* |P| + |Q| = N *)
  assert (Hsplit : length (protected_set R B len n) + length Q = N).
  { unfold protected_set, Q, N, long_count.
    apply filter_split_length.
    intros x _ Hx. apply protectedb_spec in Hx. destruct Hx as [_ [Hl _]].
    unfold longb, long in *. apply Nat.ltb_lt; exact Hl. }
  (* the ranks of the protected occurrences lie in [0, min (B - 1) N) *)
  assert (HP : length (protected_set R B len n) <= Nat.min (B - 1) N).
  { apply (inj_range_length (rank n) _ 0).
    - apply protected_set_NoDup.
    - intros x y Hx Hy E.
      apply protected_set_spec in Hx, Hy.
      destruct Hx as [Hx1 [Hx2 _]]; destruct Hy as [Hy1 [Hy2 _]].
      exact (rank_inj n x y Hx1 Hy1 Hx2 Hy2 E).
    - intros x Hx. apply protected_set_spec, protected_rank in Hx.
      destruct Hx as [Hx1 [Hx2 Hx3]].
      pose proof (rank_lt_long_count n x Hx1 Hx2). unfold N, rank in *. lia. }
  (* the ranks of the unprotected long arrivals lie in [B - 1, N) *)
  assert (HQ : length Q <= N - (B - 1)).
  { assert (HQmem : forall x, In x Q -> x < n /\ long R (len x) /\ B - 1 <= rank n x).
    { intros x Hx. unfold Q in Hx. apply filter_In in Hx.
      destruct Hx as [Hx1 Hx2]. apply in_seq in Hx1.
      apply andb_true_iff in Hx2. destruct Hx2 as [Hl Hnp].
      unfold longb in Hl. apply Nat.ltb_lt in Hl.
      split; [lia|split; [exact Hl|]].
      destruct (Nat.lt_ge_cases (rank n x) (B - 1)) as [Hr|Hr]; [|exact Hr].
      exfalso.
      assert (Hp : protectedb R B len n x = true).
      { apply protectedb_spec, protected_rank. split; [lia|split; [exact Hl|exact Hr]]. }
      rewrite Hp in Hnp. discriminate. }
    apply (inj_range_length (rank n) _ (B - 1)).
    - apply NoDup_filter, seq_NoDup.
    - intros x y Hx Hy E.
      destruct (HQmem x Hx) as [Hx1 [Hx2 _]]; destruct (HQmem y Hy) as [Hy1 [Hy2 _]].
      exact (rank_inj n x y Hx1 Hy1 Hx2 Hy2 E).
    - intros x Hx. destruct (HQmem x Hx) as [Hx1 [Hx2 Hx3]].
      pose proof (rank_lt_long_count n x Hx1 Hx2). unfold N, rank in *. lia. }
  lia.
Qed.

(** ** Uniqueness: the protected set is the only set of
    [min (B - 1) N_L] long arrivals with the top property. *)
Theorem top_keys_unique : forall n (K : list nat),
  NoDup K ->
  (forall p, In p K -> p < n /\ long R (len p)) ->
  length K = Nat.min (B - 1) (long_count R len n) ->
  (forall p q, In p K -> q < n -> long R (len q) -> ~ In q K ->
               key_lt (len q, q) (len p, p)) ->
  forall p, In p K <-> protected R B len n p.
Proof.
  intros n K Hnd Hmem Hlen Htop p. split.
  - (* p :: larger_keys n p is included in K *)
    intros Hp. destruct (Hmem p Hp) as [Hpn Hpl].
    apply protected_rank. split; [exact Hpn|split; [exact Hpl|]].
    assert (Hincl : incl (p :: larger_keys R len n p) K).
    { intros j [<-|Hj]; [exact Hp|].
      unfold larger_keys in Hj. apply filter_In in Hj.
      destruct Hj as [Hj1 Hj2]. apply in_seq in Hj1.
      apply andb_true_iff in Hj2. destruct Hj2 as [Hl Hk].
      unfold longb in Hl. apply Nat.ltb_lt in Hl. apply key_ltb_spec in Hk.
      destruct (in_dec Nat.eq_dec j K) as [HjS|HjS]; [exact HjS|].
      exfalso. apply (key_lt_asym _ _ Hk).
      apply (Htop p j Hp); [lia|exact Hl|exact HjS]. }
    assert (Hnd' : NoDup (p :: larger_keys R len n p)).
    { constructor.
      - intros Hin. unfold larger_keys in Hin. apply filter_In in Hin.
        destruct Hin as [_ Hin]. apply andb_true_iff in Hin. destruct Hin as [_ Hk].
        apply key_ltb_spec in Hk. exact (key_lt_irrefl _ Hk).
      - unfold larger_keys. apply NoDup_filter, seq_NoDup. }
    pose proof (NoDup_incl_length Hnd' Hincl) as Hle. simpl in Hle.
    unfold rank. lia.
  - (* a protected p outside K would make K too small *)
    intros Hp.
    destruct (in_dec Nat.eq_dec p K) as [HpS|HpS]; [exact HpS|].
    exfalso.
    apply protected_rank in Hp. destruct Hp as [Hpn [Hpl Hr]].
    (* K is included in larger_keys n p *)
    assert (Hincl : incl K (larger_keys R len n p)).
    { intros s Hs. destruct (Hmem s Hs) as [Hsn Hsl].
      unfold larger_keys. apply filter_In. split; [apply in_seq; lia|].
      apply andb_true_iff. split.
      - unfold longb. apply Nat.ltb_lt; exact Hsl.
      - apply key_ltb_spec. exact (Htop s p Hs Hpn Hpl HpS). }
    pose proof (NoDup_incl_length Hnd Hincl) as H1.
    (* p :: K is included in the long arrivals *)
    assert (Hincl2 : incl (p :: K) (filter (fun j => longb R (len j)) (seq 0 n))).
    { intros s Hs. apply filter_In.
      assert (Hs' : s < n /\ long R (len s)).
      { destruct Hs as [<-|Hs]; [exact (conj Hpn Hpl)|exact (Hmem s Hs)]. }
      destruct Hs' as [Hsn Hsl].
      split; [apply in_seq; lia|]. unfold longb. apply Nat.ltb_lt; exact Hsl. }
    assert (Hnd2 : NoDup (p :: K)) by (constructor; assumption).
    pose proof (NoDup_incl_length Hnd2 Hincl2) as H2. simpl in H2.
    unfold rank in Hr. fold (long_count R len n) in H2.
    lia.
Qed.

End TopKeys.
