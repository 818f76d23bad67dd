(** * Corollaries of the protected-set invariant.

    All statements are about arbitrary reachable states of the permissive
    relation, so they apply to every selection boundary of the real
    loader (see Exec.v) under both continuation semantics.

    - [mass_bound]: buffered mass >= sum of protected original lengths;
      [mass_bound_uniform]: buffered mass >= (R + 1) * |protected set|.
    - [unstarted_below_threshold]: if fewer than [B] arrived occurrences
      have original length >= l (with l > R), no occurrence of length
      >= l has started.
    - [startup]: while fewer than [B] long occurrences have arrived,
      every started occurrence is short (no long occurrence starts before
      the B-th long arrival).
    - [repeated_corpus]: a corpus with [r] sources of length >= l > R,
      repeated for [E] passes with a persistent buffer: if [E * r < B]
      none of those occurrences has started.
    - [earliest_pass], [earliest_pass_ceil]: such an occurrence can only
      start during a pass [p] with [B <= p * r], i.e. [p >= ceil(B / r)];
      worked examples for [B = 1000]. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs Semantics KeyLemma Invariant.

Lemma mass_app : forall b1 b2, mass (b1 ++ b2) = mass b1 + mass b2.
Proof.
  induction b1 as [|s b1 IH]; intros b2; simpl; [reflexivity|rewrite IH; lia].
Qed.

Section Corollaries.

Variables (R B : nat) (len : nat -> nat).

Lemma sum_len_le_mass : forall l b,
  NoDup l ->
  (forall p, In p l -> In (unchanged len p) b) ->
  sum_len len l <= mass b.
Proof.
  induction l as [|p l IH]; intros b Hnd Hin; simpl.
  - lia.
  - inversion Hnd as [|p' l' Hnot Hnd' E]; subst.
    destruct (in_split _ _ (Hin p (or_introl eq_refl))) as [b1 [b2 Eb]].
    assert (Hrest : sum_len len l <= mass (b1 ++ b2)).
    { apply IH; [exact Hnd'|].
      intros q Hq.
      assert (Hq' : In (unchanged len q) (b1 ++ unchanged len p :: b2)).
      { rewrite <- Eb; apply Hin; right; exact Hq. }
      apply in_app_or in Hq'; apply in_or_app.
      destruct Hq' as [H|[E|H]]; [left; exact H| |right; exact H].
      exfalso. apply Hnot.
      assert (Eq : q = p) by (change (sid (unchanged len q) = sid (unchanged len p)); rewrite E; reflexivity).
      rewrite <- Eq; exact Hq. }
    rewrite Eb, mass_app; simpl. rewrite mass_app in Hrest. lia.
Qed.

Theorem mass_bound : forall st,
  reachable R B len st ->
  sum_len len (protected_set R B len (narr st)) <= mass (buf st).
Proof.
  intros st H.
  apply sum_len_le_mass.
  - apply protected_set_NoDup.
  - intros p Hp. apply protected_set_spec in Hp.
    apply (protected_invariant R B len st H p Hp).
Qed.

Lemma sum_len_long : forall l,
  (forall i, In i l -> R < len i) -> S R * length l <= sum_len len l.
Proof.
  induction l as [|i l IH]; intros H; simpl.
  - lia.
  - assert (H1 : R < len i) by (apply H; left; reflexivity).
    assert (H2 : S R * length l <= sum_len len l) by (apply IH; intros j Hj; apply H; right; exact Hj).
    lia.
Qed.

Theorem mass_bound_uniform : forall st,
  reachable R B len st ->
  S R * length (protected_set R B len (narr st)) <= mass (buf st).
Proof.
  intros st H.
  eapply Nat.le_trans; [|apply (mass_bound st H)].
  apply sum_len_long. intros i Hi.
  apply protected_set_spec in Hi. destruct Hi as [_ [Hl _]]. exact Hl.
Qed.

(** Fewer than [B] arrivals of length >= l (with l > R): every arrived
    occurrence of length >= l is protected. *)
Lemma protected_below_threshold : forall n l i,
  R < l -> count_ge len l n < B -> i < n -> l <= len i ->
  protected R B len n i.
Proof.
  intros n l i Hl Hc Hi Hli.
  split; [exact Hi|split; [unfold long; lia|]].
  assert (Hlt : length (larger_keys R len n i) < count_ge len l n).
  { unfold larger_keys, count_ge.
    apply (filter_length_lt _ _ _ i).
    - intros x _ Hx. apply andb_true_iff in Hx. destruct Hx as [_ Hk].
      apply key_ltb_spec in Hk. unfold key_lt in Hk; simpl in Hk.
      apply Nat.leb_le. lia.
    - apply in_seq; lia.
    - apply Nat.leb_le; exact Hli.
    - apply andb_false_iff; right.
      destruct (key_ltb (len i, i) (len i, i)) eqn:E; [|reflexivity].
      apply key_ltb_spec in E; unfold key_lt in E; simpl in E; lia. }
  lia.
Qed.

Theorem unstarted_below_threshold : forall st l,
  reachable R B len st ->
  R < l ->
  count_ge len l (narr st) < B ->
  forall i, l <= len i -> ~ In i (started st).
Proof.
  intros st l H Hl Hc i Hli Hin.
  destruct (reachable_wf R B len st H) as [_ [_ Hh]].
  pose proof (Hh i Hin) as Hi.
  pose proof (protected_below_threshold (narr st) l i Hl Hc Hi Hli) as Hp.
  destruct (protected_invariant R B len st H i Hp) as [_ Hns].
  exact (Hns Hin).
Qed.

Lemma long_count_count_ge : forall n, long_count R len n = count_ge len (S R) n.
Proof. reflexivity. Qed.

(** Startup: while fewer than [B] long occurrences have arrived, no long
    occurrence has started. *)
Theorem startup : forall st,
  reachable R B len st ->
  long_count R len (narr st) < B ->
  forall i, In i (started st) -> len i <= R.
Proof.
  intros st H Hc i Hin.
  destruct (le_lt_dec (len i) R) as [Hle|Hgt]; [exact Hle|].
  exfalso.
  rewrite long_count_count_ge in Hc.
  apply (unstarted_below_threshold st (S R) H (Nat.lt_succ_diag_r R) Hc i); [lia|exact Hin].
Qed.

End Corollaries.

(** ** Repeated corpus. *)

Definition corpus_len (c : list nat) (i : nat) : nat := nth (i mod length c) c 0.

Definition count_src (l : nat) (c : list nat) : nat := length (filter (fun L => l <=? L) c).

Definition ceil_div (b r : nat) : nat := (b + r - 1) / r.

Lemma filter_seq_shift : forall (g : nat -> bool) m a,
  length (filter g (seq a m)) = length (filter (fun k => g (a + k)) (seq 0 m)).
Proof.
  intros g; induction m as [|m IH]; intros a; [reflexivity|].
  rewrite !seq_S, !filter_app, !app_length, IH. simpl.
  destruct (g (a + m)); reflexivity.
Qed.

Lemma filter_map_length : forall (g : nat -> bool) (h : nat -> nat) l,
  length (filter g (map h l)) = length (filter (fun x => g (h x)) l).
Proof.
  intros g h; induction l as [|x l IH]; simpl; [reflexivity|].
  destruct (g (h x)); simpl; rewrite IH; reflexivity.
Qed.

Lemma filter_nth_seq : forall (g : nat -> bool) c,
  length (filter (fun k => g (nth k c 0)) (seq 0 (length c))) = length (filter g c).
Proof.
  intros g; induction c as [|x c IH]; [reflexivity|].
  change (length (x :: c)) with (S (length c)).
  change (seq 0 (S (length c))) with (0 :: seq 1 (length c)).
  rewrite <- seq_shift.
  cbn [filter nth].
  destruct (g x); cbn [length]; rewrite filter_map_length; cbn beta iota;
    rewrite IH; reflexivity.
Qed.

Lemma count_ge_corpus : forall c l E,
  0 < length c ->
  count_ge (corpus_len c) l (E * length c) = E * count_src l c.
Proof.
  intros c l E Hc.
  induction E as [|E IH]; [reflexivity|].
  unfold count_ge in *.
  replace (S E * length c) with (E * length c + length c) by lia.
  rewrite seq_app, filter_app, app_length, IH, filter_seq_shift.
  simpl plus.
  rewrite (filter_ext_in _ (fun k => l <=? nth k c 0)).
  - rewrite (filter_nth_seq (fun L => l <=? L)). unfold count_src. lia.
  - intros k Hk. apply in_seq in Hk. unfold corpus_len.
    replace (E * length c + k) with (k + E * length c) by lia.
    rewrite Nat.mod_add by lia. rewrite Nat.mod_small by lia. reflexivity.
Qed.

Lemma count_ge_mono : forall len l n m, n <= m -> count_ge len l n <= count_ge len l m.
Proof.
  intros len l n m Hnm. unfold count_ge.
  replace m with (n + (m - n)) by lia.
  rewrite seq_app, filter_app, app_length. lia.
Qed.

Lemma count_src_pos : forall c l i,
  0 < length c -> l <= corpus_len c i -> 0 < count_src l c.
Proof.
  intros c l i Hc Hl. unfold count_src.
  assert (Hin : In (corpus_len c i) (filter (fun L => l <=? L) c)).
  { apply filter_In; split.
    - unfold corpus_len. apply nth_In. apply Nat.mod_upper_bound; lia.
    - apply Nat.leb_le; exact Hl. }
  destruct (filter (fun L => l <=? L) c); [contradiction|simpl; lia].
Qed.

Theorem repeated_corpus : forall R B c E l st,
  0 < length c ->
  R < l ->
  E * count_src l c < B ->
  reachable R B (corpus_len c) st ->
  narr st <= E * length c ->
  forall i, l <= corpus_len c i -> ~ In i (started st).
Proof.
  intros R B c E l st Hc Hl HE H Hn i Hi.
  apply (unstarted_below_threshold R B (corpus_len c) st l H Hl); [|exact Hi].
  pose proof (count_ge_mono (corpus_len c) l _ _ Hn).
  rewrite count_ge_corpus in H0 by exact Hc. lia.
Qed.

(** An occurrence of length >= l can only have started by the end of pass
    [p] (at most [p * |c|] arrivals) if [B <= p * r]. *)
Theorem earliest_pass : forall R B c p l st i,
  0 < length c ->
  R < l ->
  reachable R B (corpus_len c) st ->
  narr st <= p * length c ->
  l <= corpus_len c i ->
  In i (started st) ->
  B <= p * count_src l c.
Proof.
  intros R B c p l st i Hc Hl H Hn Hi Hin.
  destruct (le_lt_dec B (p * count_src l c)) as [Hle|Hlt]; [exact Hle|].
  exfalso. apply (repeated_corpus R B c p l st Hc Hl Hlt H Hn i Hi Hin).
Qed.

Lemma ceil_div_spec : forall b r p, 0 < r -> (b <= p * r <-> ceil_div b r <= p).
Proof.
  intros b r p Hr. unfold ceil_div.
  pose proof (Nat.div_mod (b + r - 1) r ltac:(lia)) as Hdm.
  pose proof (Nat.mod_upper_bound (b + r - 1) r ltac:(lia)) as Hmb.
  set (q := (b + r - 1) / r) in *.
  set (m := (b + r - 1) mod r) in *.
  split; intros H.
  - destruct (le_lt_dec q p) as [Hq|Hq]; [exact Hq|].
    exfalso.
    assert (Hm : r * (S p) <= r * q) by (apply Nat.mul_le_mono_l; lia).
    assert (E1 : r * S p = r * p + r) by ring.
    assert (E2 : p * r = r * p) by ring.
    lia.
  - assert (Hm : r * q <= r * p) by (apply Nat.mul_le_mono_l; exact H).
    assert (E2 : p * r = r * p) by ring.
    lia.
Qed.

Theorem earliest_pass_ceil : forall R B c p l st i,
  0 < length c ->
  R < l ->
  reachable R B (corpus_len c) st ->
  narr st <= p * length c ->
  l <= corpus_len c i ->
  In i (started st) ->
  ceil_div B (count_src l c) <= p.
Proof.
  intros R B c p l st i Hc Hl H Hn Hi Hin.
  apply ceil_div_spec; [apply (count_src_pos c l i Hc Hi)|].
  apply (earliest_pass R B c p l st i Hc Hl H Hn Hi Hin).
Qed.

(** Worked examples from the paper, B = 1000. *)
Example earliest_pass_r789 : ceil_div 1000 789 = 2. Proof. vm_compute. reflexivity. Qed.
Example earliest_pass_r196 : ceil_div 1000 196 = 6. Proof. vm_compute. reflexivity. Qed.
Example earliest_pass_r39 : ceil_div 1000 39 = 26. Proof. vm_compute. reflexivity. Qed.
Example earliest_pass_r9 : ceil_div 1000 9 = 112. Proof. vm_compute. reflexivity. Qed.
Example earliest_pass_r1 : ceil_div 1000 1 = 1000. Proof. vm_compute. reflexivity. Qed.
