(** * BoundedWait: a lossless streaming packer with a proved start-delay bound.

    The [bounded-wait] policy (issue 13) keeps the loader's selection rule and
    the [continue] semantics (a crop keeps its suffix in place), and adds one
    rule: at a row start, when the OLDEST UNSTARTED buffered span arrived more
    than [A] rows ago, that span is placed first in the row (cropped, with
    continuation, if it is longer than the row).

    This file states a permissive step relation [wstep] for that policy and
    proves, for every reachable state (so for every arrival sequence):

    - [bw_start_bound]: every occurrence that has started did so in a row at
      most [D = A + B + bmax - 2] rows after its arrival row;
    - [bw_unstarted_bound]: every arrived occurrence that has not started is
      at most [D] rows past its arrival row (so it starts within [D] rows as
      long as the stream lasts);
    - [bw_conservation]: no token is discarded: the arrived tokens are exactly
      the emitted tokens plus the buffered ones;
    - [bw_rows_full]: the emitted tokens fill rows [0 .. row-1] completely and
      [R - rem] positions of the current row;
    - [bw_arows_prefix]: the arrival row of an occurrence never changes.

    [bmax] bounds the refill batch sizes; [B] is the minimum occupancy.

    The relation is more permissive than the engines:
    - an arrival step appends a batch of [1 <= k <= bmax] new occurrences,
      unchanged, at the end of the buffer, but only while fewer than [B]
      spans are buffered (the loader's refill; this is what bounds the queue
      in front of an occurrence), recording the current row as their
      arrival row;
    - a selection may take ANY span and emit ANY [1 <= m <= min(cur, rem)]
      of its tokens, EXCEPT that at a row start ([rem = R]) where the oldest
      unstarted span [u] is overdue ([A < row - arrival row of u]) it must
      take [u]; the span is removed when all its tokens are emitted and kept
      in place with [cur - m] tokens otherwise (no token is ever dropped).
      It needs no minimum occupancy, so the bound also covers draining.

    "Unstarted" is [cur = orig]: every selection emits at least one token
    and only shrinks the span.

    Why the bound holds (the invariant [ok_wait]): for an unstarted span [i]
    with arrival row [a], let [cnt i] be the number of unstarted spans at or
    before [i] in buffer order, [done i] the number of row starts after row
    [a + A] whose forced check has already run, and [late i] = 1 once a row
    boundary has passed since [i] arrived.  Then
    [cnt i + done i + late i <= B + bmax - 1]: a batch is appended only below
    [B] spans, so at most [B - 1 + bmax] spans are buffered; every forced
    row start that increments [done i] selects the oldest unstarted span,
    which is counted by [cnt i]; and when the first row boundary after the
    arrival passes, the selection that completed the row took a span of a
    buffer of at most [B - 1 + bmax] spans, so [cnt i] is at most
    [B + bmax - 2].  As [cnt i >= 1], [i] cannot be unstarted [D + 1] rows
    after its arrival. *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs.

Record wstate : Type := mkW {
  w_narr    : nat;               (* arrivals so far *)
  w_buf     : buffer;            (* spans in buffer order *)
  w_row     : nat;               (* index of the row being filled *)
  w_rem     : nat;               (* free positions left in that row *)
  w_arows   : list nat;          (* arrival row of occurrence i at position i *)
  w_starts  : list (nat * nat);  (* (occurrence, row of its first token), newest first *)
  w_emitted : nat                (* tokens emitted into rows *)
}.

Definition unstartedb (s : span) : bool := cur s =? orig s.

(** The oldest unstarted span: the first one in buffer order. *)
Fixpoint first_unstarted (b : buffer) : option span :=
  match b with
  | [] => None
  | s :: t => if unstartedb s then Some s else first_unstarted t
  end.

(** Unstarted spans at or before occurrence [i] (ids increase in buffer order). *)
Definition cnt (i : nat) (b : buffer) : nat :=
  length (filter (fun s => (sid s <=? i) && unstartedb s) b).

Fixpoint bw_mass (b : buffer) : nat :=
  match b with
  | [] => 0
  | s :: t => cur s + bw_mass t
  end.

(** ** Generic facts. *)

Lemma bw_mass_app : forall b1 b2, bw_mass (b1 ++ b2) = bw_mass b1 + bw_mass b2.
Proof.
  induction b1 as [|s b1 IH]; intros b2; simpl; [reflexivity|rewrite IH; lia].
Qed.

Lemma bw_mass_is_mass : forall b, bw_mass b = mass b.
Proof. induction b as [|s b IH]; simpl; [reflexivity|rewrite IH; reflexivity]. Qed.

Lemma cnt_app : forall i b1 b2, cnt i (b1 ++ b2) = cnt i b1 + cnt i b2.
Proof. intros i b1 b2; unfold cnt; rewrite filter_app, app_length; reflexivity. Qed.

Lemma cnt_cons : forall i s b,
  cnt i (s :: b) = (if (sid s <=? i) && unstartedb s then 1 else 0) + cnt i b.
Proof. intros i s b; unfold cnt; simpl; destruct (_ && _); reflexivity. Qed.

Lemma cnt_le_length : forall i b, cnt i b <= length b.
Proof.
  intros i b; induction b as [|s b IH]; [unfold cnt; simpl; lia|].
  rewrite cnt_cons; simpl; destruct (_ && _); lia.
Qed.

Lemma cnt_pos : forall i b t,
  In t b -> sid t <= i -> cur t = orig t -> 1 <= cnt i b.
Proof.
  intros i b t; induction b as [|s b IH]; simpl; intros Hin Hle Hu; [contradiction|].
  rewrite cnt_cons. destruct Hin as [<-|Hin].
  - unfold unstartedb. rewrite Hu, Nat.eqb_refl.
    apply Nat.leb_le in Hle. rewrite Hle. simpl; lia.
  - specialize (IH Hin Hle Hu). lia.
Qed.

Lemma first_unstarted_in : forall b u,
  first_unstarted b = Some u -> In u b /\ cur u = orig u.
Proof.
  induction b as [|s b IH]; simpl; intros u H; [discriminate|].
  destruct (unstartedb s) eqn:E.
  - injection H as <-. split; [left; reflexivity|apply Nat.eqb_eq; exact E].
  - destruct (IH u H) as [H1 H2]. split; [right; exact H1|exact H2].
Qed.

Lemma first_unstarted_exists : forall b t,
  In t b -> cur t = orig t -> exists u, first_unstarted b = Some u.
Proof.
  induction b as [|s b IH]; simpl; intros t Hin Hu; [contradiction|].
  destruct (unstartedb s) eqn:E; [eexists; reflexivity|].
  destruct Hin as [<-|Hin].
  - unfold unstartedb in E. rewrite Hu, Nat.eqb_refl in E. discriminate.
  - apply (IH t Hin Hu).
Qed.

Lemma first_unstarted_min : forall b u t,
  incr_ids b -> first_unstarted b = Some u -> In t b -> cur t = orig t -> sid u <= sid t.
Proof.
  induction b as [|s b IH]; simpl; intros u t Hi H Hin Hu; [discriminate|].
  destruct Hi as [Hs Hi].
  destruct (unstartedb s) eqn:E.
  - injection H as <-. destruct Hin as [<-|Hin]; [lia|].
    specialize (Hs t Hin); lia.
  - destruct Hin as [<-|Hin].
    + unfold unstartedb in E. rewrite Hu, Nat.eqb_refl in E. discriminate.
    + apply (IH u t Hi H Hin Hu).
Qed.

Lemma nth_repeat_lt : forall (x d : nat) k j, j < k -> nth j (repeat x k) d = x.
Proof.
  intros x d; induction k as [|k IH]; intros [|j] Hj; simpl; try lia.
  apply IH; lia.
Qed.

Lemma incr_ids_in_app : forall b1 s b2 t,
  incr_ids (b1 ++ s :: b2) -> In t (b1 ++ s :: b2) -> sid t = sid s ->
  t = s.
Proof.
  intros b1 s b2 t Hi Ht Heq.
  apply (incr_ids_unique _ t s Hi Ht); [apply in_or_app; right; left; reflexivity|exact Heq].
Qed.

Section BoundedWait.

Variables (R B A bmax : nat) (len : nat -> nat).

(** The start-delay bound, in rows. *)
Definition bw_bound : nat := A + B + bmax - 2.

Definition arow (st : wstate) (i : nat) : nat := nth i (w_arows st) 0.

(** The forced case: at a row start, the oldest unstarted span [u] is overdue. *)
Definition forced (st : wstate) (u : span) : Prop :=
  w_rem st = R /\ first_unstarted (w_buf st) = Some u /\ A < w_row st - arow st (sid u).

(** A batch of [k] new occurrences [n .. n+k-1], unchanged. *)
Definition fresh (n k : nat) : buffer := map (fun j => mkSpan j (len j) (len j)) (seq n k).

(** The state after emitting [m] tokens of [s] (buffer [b1 ++ s :: b2]). *)
Definition after_select (st : wstate) (b1 : buffer) (s : span) (b2 : buffer) (m : nat) : wstate :=
  mkW (w_narr st)
      (if m =? cur s then b1 ++ b2 else b1 ++ mkSpan (sid s) (orig s) (cur s - m) :: b2)
      (if w_rem st - m =? 0 then S (w_row st) else w_row st)
      (if w_rem st - m =? 0 then R else w_rem st - m)
      (w_arows st)
      (if cur s =? orig s then (sid s, w_row st) :: w_starts st else w_starts st)
      (w_emitted st + m).

Inductive wstep : wstate -> wstate -> Prop :=
| wstep_arrive : forall st k,
    length (w_buf st) < B -> 1 <= k <= bmax ->
    (forall j, w_narr st <= j < w_narr st + k -> 0 < len j) ->
    wstep st (mkW (w_narr st + k) (w_buf st ++ fresh (w_narr st) k) (w_row st) (w_rem st)
                  (w_arows st ++ repeat (w_row st) k) (w_starts st) (w_emitted st))
| wstep_select : forall st b1 s b2 m,
    w_buf st = b1 ++ s :: b2 ->
    1 <= m -> m <= cur s -> m <= w_rem st ->
    (forall u, forced st u -> s = u) ->
    wstep st (after_select st b1 s b2 m).

Definition winit : wstate := mkW 0 [] 0 R [] [] 0.

Inductive wreachable : wstate -> Prop :=
| wreach_init : wreachable winit
| wreach_step : forall st st', wreachable st -> wstep st st' -> wreachable st'.

(** Forced row starts after row [a + A] whose check has run. *)
Definition done (st : wstate) (i : nat) : nat :=
  if w_rem st =? R then w_row st - (arow st i + A + 1) else w_row st - (arow st i + A).

(** 1 once a row boundary has passed since the arrival of [i]. *)
Definition late (st : wstate) (i : nat) : nat := if arow st i <? w_row st then 1 else 0.

Record wok (st : wstate) : Prop := {
  ok_rem : 0 < w_rem st <= R;
  ok_arows_len : length (w_arows st) = w_narr st;
  ok_arows_mono : forall i j, i <= j -> j < w_narr st -> arow st i <= arow st j;
  ok_arows_row : forall i, i < w_narr st -> arow st i <= w_row st;
  ok_spans : forall s, In s (w_buf st) ->
               sid s < w_narr st /\ orig s = len (sid s) /\ 0 < cur s /\ cur s <= orig s;
  ok_incr : incr_ids (w_buf st);
  ok_size : length (w_buf st) <= B - 1 + bmax;
  ok_wait : forall s, In s (w_buf st) -> cur s = orig s ->
              cnt (sid s) (w_buf st) + done st (sid s) + late st (sid s) <= B + bmax - 1;
  ok_starts : forall i r, In (i, r) (w_starts st) -> i < w_narr st /\ r <= arow st i + bw_bound;
  ok_unstarted : forall i, i < w_narr st -> ~ In i (map fst (w_starts st)) ->
                   exists s, In s (w_buf st) /\ sid s = i /\ cur s = orig s;
  ok_mass : sum_len len (seq 0 (w_narr st)) = w_emitted st + bw_mass (w_buf st);
  ok_rows : w_emitted st = w_row st * R + (R - w_rem st)
}.

Hypotheses (HR0 : 0 < R) (HB1 : 1 <= B) (Hb1 : 1 <= bmax).

Lemma wok_init : wok winit.
Proof.
  constructor; simpl; intros; try contradiction; lia.
Qed.

(** The bound read off the invariant, for one unstarted buffered span. *)
Lemma wait_bound_of : forall st s,
  wok st -> In s (w_buf st) -> cur s = orig s -> w_row st <= arow st (sid s) + bw_bound.
Proof.
  intros st s Hok Hin Hu.
  pose proof (ok_wait st Hok s Hin Hu) as Hw.
  pose proof (cnt_pos (sid s) (w_buf st) s Hin (le_n _) Hu) as Hc.
  unfold done, late, bw_bound in *.
  destruct (w_rem st =? R); destruct (arow st (sid s) <? w_row st) eqn:El;
    [apply Nat.ltb_lt in El|apply Nat.ltb_nlt in El|apply Nat.ltb_lt in El|apply Nat.ltb_nlt in El];
    lia.
Qed.

Lemma sum_len_app : forall l1 l2, sum_len len (l1 ++ l2) = sum_len len l1 + sum_len len l2.
Proof.
  induction l1 as [|x l1 IH]; intros l2; simpl; [reflexivity|rewrite IH; lia].
Qed.

Lemma bw_mass_fresh : forall k n, bw_mass (fresh n k) = sum_len len (seq n k).
Proof.
  induction k as [|k IH]; intros n; simpl; [reflexivity|].
  unfold fresh in IH; rewrite IH; reflexivity.
Qed.

Lemma fresh_in : forall n k s,
  In s (fresh n k) -> n <= sid s < n + k /\ s = mkSpan (sid s) (len (sid s)) (len (sid s)).
Proof.
  intros n k s Hs. unfold fresh in Hs. apply in_map_iff in Hs.
  destruct Hs as [j [<- Hj]]. apply in_seq in Hj. simpl. split; [lia|reflexivity].
Qed.

Lemma fresh_length : forall n k, length (fresh n k) = k.
Proof. intros n k; unfold fresh; rewrite map_length, seq_length; reflexivity. Qed.

Lemma incr_ids_fresh : forall k n, incr_ids (fresh n k).
Proof.
  induction k as [|k IH]; intros n; simpl; [exact I|].
  split; [|apply IH].
  intros u Hu. apply fresh_in in Hu. simpl in Hu. lia.
Qed.

Lemma cnt_fresh : forall i n k, i < n -> cnt i (fresh n k) = 0.
Proof.
  intros i n k Hi. unfold cnt.
  assert (H : forall l, (forall s, In s l -> i < sid s) ->
            length (filter (fun s => (sid s <=? i) && unstartedb s) l) = 0).
  { induction l as [|s l IH]; simpl; intros Hl; [reflexivity|].
    assert (Hs : i < sid s) by (apply Hl; left; reflexivity).
    replace (sid s <=? i) with false by (symmetry; apply Nat.leb_nle; lia).
    simpl. apply IH. intros t Ht; apply Hl; right; exact Ht. }
  apply H. intros s Hs. apply fresh_in in Hs. lia.
Qed.

Lemma arow_app : forall st l i, i < length (w_arows st) ->
  nth i (w_arows st ++ l) 0 = arow st i.
Proof. intros st l i Hi; unfold arow; apply app_nth1; exact Hi. Qed.

(** *** Arrival steps preserve the invariant. *)

Lemma wok_arrive : forall st k,
  wok st -> length (w_buf st) < B -> 1 <= k <= bmax ->
  (forall j, w_narr st <= j < w_narr st + k -> 0 < len j) ->
  wok (mkW (w_narr st + k) (w_buf st ++ fresh (w_narr st) k) (w_row st) (w_rem st)
           (w_arows st ++ repeat (w_row st) k) (w_starts st) (w_emitted st)).
Proof.
  intros st k Hok Hlen Hk Hpos.
  pose proof (ok_arows_len st Hok) as Hal.
  pose proof (ok_arows_row st Hok) as Har.
  (* the arrival row of every occurrence after the step *)
  assert (Hnew : forall i, i < w_narr st + k ->
            nth i (w_arows st ++ repeat (w_row st) k) 0 =
            if i <? w_narr st then arow st i else w_row st).
  { intros i Hi. destruct (i <? w_narr st) eqn:E.
    - apply Nat.ltb_lt in E. apply arow_app. lia.
    - apply Nat.ltb_nlt in E. rewrite app_nth2 by lia. apply nth_repeat_lt. lia. }
  assert (Hold : forall i, i < w_narr st -> nth i (w_arows st ++ repeat (w_row st) k) 0 = arow st i).
  { intros i Hi. apply arow_app. lia. }
  constructor; unfold done, late, arow; simpl; fold (arow st).
  - exact (ok_rem st Hok).
  - rewrite app_length, repeat_length; lia.
  - intros i j Hij Hj. rewrite (Hnew i ltac:(lia)), (Hnew j Hj).
    destruct (Nat.ltb_spec i (w_narr st)); destruct (Nat.ltb_spec j (w_narr st)); try lia.
    + apply (ok_arows_mono st Hok); lia.
    + apply Har; assumption.
  - intros i Hi. rewrite (Hnew i Hi). destruct (Nat.ltb_spec i (w_narr st)); [|lia].
    apply Har; assumption.
  - intros s Hs. apply in_app_or in Hs. destruct Hs as [Hs|Hs].
    + destruct (ok_spans st Hok s Hs) as [H1 H2]. split; [lia|exact H2].
    + destruct (fresh_in _ _ s Hs) as [H1 H2]. rewrite H2; simpl.
      split; [lia|split; [reflexivity|split; [apply Hpos; lia|lia]]].
  - apply incr_ids_app. split; [exact (ok_incr st Hok)|split; [apply incr_ids_fresh|]].
    intros x y Hx Hy. destruct (ok_spans st Hok x Hx) as [H1 _].
    apply fresh_in in Hy. lia.
  - rewrite app_length, fresh_length. pose proof (ok_size st Hok). lia.
  - intros s Hs Hu. apply in_app_or in Hs. destruct Hs as [Hs|Hs].
    + destruct (ok_spans st Hok s Hs) as [H1 _].
      rewrite cnt_app, (cnt_fresh (sid s) (w_narr st) k H1), Nat.add_0_r, (Hold _ H1).
      exact (ok_wait st Hok s Hs Hu).
    + destruct (fresh_in _ _ s Hs) as [H1 _].
      rewrite (Hnew (sid s) ltac:(lia)).
      replace (sid s <? w_narr st) with false by (symmetry; apply Nat.ltb_nlt; lia).
      rewrite Nat.ltb_irrefl.
      pose proof (cnt_le_length (sid s) (w_buf st ++ fresh (w_narr st) k)) as Hc.
      rewrite app_length, fresh_length in Hc.
      destruct (w_rem st =? R); lia.
  - intros i r Hin. destruct (ok_starts st Hok i r Hin) as [H1 H2].
    split; [lia|]. rewrite (Hold i H1). exact H2.
  - intros i Hi Hns. destruct (i <? w_narr st) eqn:E.
    + apply Nat.ltb_lt in E. destruct (ok_unstarted st Hok i E Hns) as [s [H1 H2]].
      exists s; split; [apply in_or_app; left; exact H1|exact H2].
    + apply Nat.ltb_nlt in E. exists (mkSpan i (len i) (len i)).
      split; [|simpl; split; reflexivity].
      apply in_or_app; right. unfold fresh. apply in_map_iff.
      exists i; split; [reflexivity|apply in_seq; lia].
  - rewrite seq_app, sum_len_app, bw_mass_app, bw_mass_fresh, (ok_mass st Hok).
    rewrite Nat.add_0_l. lia.
  - exact (ok_rows st Hok).
Qed.

(** *** Selection steps preserve the invariant. *)

Lemma cnt_select : forall i b1 s b2,
  cnt i (b1 ++ s :: b2) = cnt i (b1 ++ b2) + (if (sid s <=? i) && unstartedb s then 1 else 0).
Proof. intros i b1 s b2; rewrite !cnt_app, cnt_cons; lia. Qed.

Lemma cnt_keep : forall i b1 s' b2,
  cur s' <> orig s' -> cnt i (b1 ++ s' :: b2) = cnt i (b1 ++ b2).
Proof.
  intros i b1 s' b2 H. rewrite cnt_select.
  unfold unstartedb. replace (cur s' =? orig s') with false by (symmetry; apply Nat.eqb_neq; exact H).
  rewrite andb_false_r. lia.
Qed.

Lemma bw_mass_select : forall b1 s b2, bw_mass (b1 ++ s :: b2) = bw_mass (b1 ++ b2) + cur s.
Proof. intros b1 s b2; rewrite !bw_mass_app; simpl; lia. Qed.

Lemma incr_ids_keep : forall b1 s s' b2,
  sid s' = sid s -> incr_ids (b1 ++ s :: b2) -> incr_ids (b1 ++ s' :: b2).
Proof.
  intros b1 s s' b2 Hid Hi.
  apply incr_ids_app in Hi; destruct Hi as [Hi1 [[Hs Hi2] Hi3]].
  apply incr_ids_app; split; [exact Hi1|split; [split; [rewrite Hid; exact Hs|exact Hi2]|]].
  intros x y Hx [<-|Hy].
  - rewrite Hid. apply Hi3; [exact Hx|left; reflexivity].
  - apply Hi3; [exact Hx|right; exact Hy].
Qed.

Lemma incr_ids_remove : forall b1 s b2, incr_ids (b1 ++ s :: b2) -> incr_ids (b1 ++ b2).
Proof.
  intros b1 s b2 Hi.
  apply incr_ids_app in Hi; destruct Hi as [Hi1 [[_ Hi2] Hi3]].
  apply incr_ids_app; split; [exact Hi1|split; [exact Hi2|]].
  intros x y Hx Hy; apply Hi3; [exact Hx|right; exact Hy].
Qed.

(** The new buffer after a selection: [b1 ++ b2], or [b1 ++ s' :: b2] with a
    started [s'] of the same occurrence. *)
Lemma after_select_buf : forall st b1 s b2 m t,
  In t (w_buf (after_select st b1 s b2 m)) ->
  In t (b1 ++ b2) \/ (t = mkSpan (sid s) (orig s) (cur s - m) /\ m <> cur s).
Proof.
  intros st b1 s b2 m t Ht; simpl in Ht.
  destruct (m =? cur s) eqn:Em; [left; exact Ht|].
  apply Nat.eqb_neq in Em.
  apply in_app_or in Ht; destruct Ht as [Ht|[<-|Ht]].
  - left; apply in_or_app; left; exact Ht.
  - right; split; [reflexivity|exact Em].
  - left; apply in_or_app; right; exact Ht.
Qed.

Lemma wok_select : forall st b1 s b2 m,
  wok st -> w_buf st = b1 ++ s :: b2 ->
  1 <= m -> m <= cur s -> m <= w_rem st ->
  (forall u, forced st u -> s = u) ->
  wok (after_select st b1 s b2 m).
Proof.
  intros st b1 s b2 m Hok Hb Hm1 Hm2 Hm3 Hforced.
  assert (Hs : In s (w_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
  destruct (ok_spans st Hok s Hs) as [Hs1 [Hs2 [Hs3 Hs4]]].
  assert (Hsub : forall t, In t (b1 ++ b2) -> In t (w_buf st)).
  { intros t Ht; rewrite Hb; apply in_app_or in Ht; apply in_or_app.
    destruct Ht as [Ht|Ht]; [left; exact Ht|right; right; exact Ht]. }
  assert (Hlen : length (w_buf st) = S (length (b1 ++ b2))).
  { rewrite Hb, !app_length; simpl; lia. }
  (* the count of the new buffer never counts the selected span *)
  assert (Hcnt : forall i, cnt i (w_buf (after_select st b1 s b2 m)) = cnt i (b1 ++ b2)).
  { intros i; simpl. destruct (m =? cur s) eqn:Em; [reflexivity|].
    apply Nat.eqb_neq in Em. apply cnt_keep; simpl; lia. }
  pose proof (ok_rem st Hok) as Hrem.
  pose proof (ok_size st Hok) as Hsize.
  constructor.
  - unfold after_select; simpl. destruct (w_rem st - m =? 0) eqn:E;
      [lia|apply Nat.eqb_neq in E; lia].
  - exact (ok_arows_len st Hok).
  - exact (ok_arows_mono st Hok).
  - intros i Hi. pose proof (ok_arows_row st Hok i Hi).
    unfold arow in *; simpl in *. destruct (w_rem st - m =? 0); lia.
  - intros t Ht. destruct (after_select_buf st b1 s b2 m t Ht) as [Ht'|[-> Hne]].
    + exact (ok_spans st Hok t (Hsub t Ht')).
    + simpl. split; [exact Hs1|split; [exact Hs2|lia]].
  - simpl. pose proof (ok_incr st Hok) as Hi; rewrite Hb in Hi.
    destruct (m =? cur s); [apply (incr_ids_remove _ s); exact Hi|].
    apply (incr_ids_keep _ s); [reflexivity|exact Hi].
  - simpl. destruct (m =? cur s); rewrite !app_length in *; simpl in *; lia.
  - intros t Ht Hu.
    destruct (after_select_buf st b1 s b2 m t Ht) as [Ht'|[-> Hne]]; [|simpl in Hu; lia].
    pose proof (Hsub t Ht') as Htb.
    pose proof (ok_wait st Hok t Htb Hu) as Hw.
    destruct (ok_spans st Hok t Htb) as [Ht1 _].
    pose proof (ok_arows_row st Hok (sid t) Ht1) as Har.
    rewrite Hcnt.
    pose proof (cnt_le_length (sid t) (b1 ++ b2)) as Hc'.
    rewrite Hb, cnt_select in Hw.
    (* a forced row start selects a span counted for [t] *)
    assert (Hf : w_rem st = R -> A < w_row st - arow st (sid t) ->
                 (if (sid s <=? sid t) && unstartedb s then 1 else 0) = 1).
    { intros HqR Hover.
      destruct (first_unstarted_exists (w_buf st) t Htb Hu) as [u Hu1].
      destruct (first_unstarted_in _ _ Hu1) as [Hu2 Hu3].
      pose proof (first_unstarted_min _ u t (ok_incr st Hok) Hu1 Htb Hu) as Hmin.
      assert (Hau : arow st (sid u) <= arow st (sid t)) by (apply (ok_arows_mono st Hok); lia).
      assert (Hsu : s = u) by (apply Hforced; split; [exact HqR|split; [exact Hu1|lia]]).
      subst u. apply Nat.leb_le in Hmin. rewrite Hmin. unfold unstartedb.
      rewrite Hu3, Nat.eqb_refl. reflexivity. }
    destruct ((sid s <=? sid t) && unstartedb s) eqn:Ec.
    + unfold done, late, arow in *; simpl in *.
      destruct (w_rem st - m =? 0) eqn:Eq;
        [apply Nat.eqb_eq in Eq|apply Nat.eqb_neq in Eq];
        rewrite ?Nat.eqb_refl;
        destruct (w_rem st =? R) eqn:ER; [apply Nat.eqb_eq in ER|apply Nat.eqb_neq in ER|
                                         apply Nat.eqb_eq in ER|apply Nat.eqb_neq in ER];
        repeat match goal with
               | |- context [?x <? ?y] => destruct (Nat.ltb_spec x y)
               | H : context [?x <? ?y] |- _ => destruct (Nat.ltb_spec x y)
               | |- context [?x =? ?y] => destruct (Nat.eqb_spec x y)
               end; lia.
    + unfold done, late, arow in *; simpl in *.
      destruct (w_rem st - m =? 0) eqn:Eq;
        [apply Nat.eqb_eq in Eq|apply Nat.eqb_neq in Eq];
        rewrite ?Nat.eqb_refl;
        destruct (w_rem st =? R) eqn:ER; [apply Nat.eqb_eq in ER|apply Nat.eqb_neq in ER|
                                         apply Nat.eqb_eq in ER|apply Nat.eqb_neq in ER];
        repeat match goal with
               | |- context [?x <? ?y] => destruct (Nat.ltb_spec x y)
               | H : context [?x <? ?y] |- _ => destruct (Nat.ltb_spec x y)
               | |- context [?x =? ?y] => destruct (Nat.eqb_spec x y)
               end;
        try (specialize (Hf ltac:(assumption) ltac:(lia)); discriminate); lia.
  - intros i r Hin. simpl in Hin. unfold arow; simpl; fold (arow st).
    destruct (cur s =? orig s) eqn:Eu.
    + destruct Hin as [Heq|Hin].
      * injection Heq as <- <-. split; [exact Hs1|].
        apply (wait_bound_of st s Hok Hs). apply Nat.eqb_eq; exact Eu.
      * exact (ok_starts st Hok i r Hin).
    + exact (ok_starts st Hok i r Hin).
  - intros i Hi Hns. simpl in Hi, Hns.
    assert (Hns' : ~ In i (map fst (w_starts st))).
    { intros H; apply Hns. destruct (cur s =? orig s); [right; exact H|exact H]. }
    destruct (ok_unstarted st Hok i Hi Hns') as [t [Ht1 [Ht2 Ht3]]].
    exists t; split; [|split; assumption].
    rewrite Hb in Ht1. apply in_app_or in Ht1. destruct Ht1 as [Ht1|[<-|Ht1]].
    + simpl. destruct (m =? cur s); apply in_or_app; left; exact Ht1.
    + exfalso; apply Hns. rewrite Ht3, Nat.eqb_refl. left; simpl; exact Ht2.
    + simpl. destruct (m =? cur s); apply in_or_app; right; [exact Ht1|right; exact Ht1].
  - simpl. pose proof (ok_mass st Hok) as Hmass. rewrite Hb, bw_mass_select in Hmass.
    destruct (m =? cur s) eqn:Em.
    + apply Nat.eqb_eq in Em. lia.
    + rewrite bw_mass_select; simpl. lia.
  - simpl. pose proof (ok_rows st Hok) as Hrows.
    destruct (w_rem st - m =? 0) eqn:E; [apply Nat.eqb_eq in E|apply Nat.eqb_neq in E]; nia.
Qed.

Lemma wok_step : forall st st', wok st -> wstep st st' -> wok st'.
Proof.
  intros st st' Hok Hs; destruct Hs as [st k Hl Hk Hp|st b1 s b2 m Hb H1 H2 H3 Hf].
  - apply wok_arrive; assumption.
  - apply wok_select; assumption.
Qed.

(** ** Main theorems. *)

(** The invariant holds in every reachable state. *)
Theorem bw_invariant : forall st, wreachable st -> wok st.
Proof.
  intros st H; induction H as [|st st' _ IH Hs].
  - apply wok_init.
  - apply (wok_step st); assumption.
Qed.

(** Every occurrence that has started did so at most [bw_bound] rows after
    its arrival row. *)
Theorem bw_start_bound : forall st i r,
  wreachable st -> In (i, r) (w_starts st) -> r <= arow st i + bw_bound.
Proof.
  intros st i r H Hin. apply (ok_starts st (bw_invariant st H) i r Hin).
Qed.

(** Every arrived occurrence that has not started is buffered whole and at
    most [bw_bound] rows past its arrival row: it starts within [bw_bound]
    rows of its arrival while the stream lasts. *)
Theorem bw_unstarted_bound : forall st i,
  wreachable st -> i < w_narr st -> ~ In i (map fst (w_starts st)) ->
  In (mkSpan i (len i) (len i)) (w_buf st) /\ w_row st <= arow st i + bw_bound.
Proof.
  intros st i H Hi Hns. pose proof (bw_invariant st H) as Hok.
  destruct (ok_unstarted st Hok i Hi Hns) as [s [Hs1 [Hs2 Hs3]]].
  destruct (ok_spans st Hok s Hs1) as [_ [Ho _]].
  split.
  - replace (mkSpan i (len i) (len i)) with s; [exact Hs1|].
    destruct s as [si so sc]; simpl in *; subst; reflexivity.
  - rewrite <- Hs2. apply (wait_bound_of st s Hok Hs1 Hs3).
Qed.

(** No token is discarded: arrived tokens = emitted + buffered. *)
Theorem bw_conservation : forall st,
  wreachable st -> sum_len len (seq 0 (w_narr st)) = w_emitted st + mass (w_buf st).
Proof.
  intros st H. rewrite <- bw_mass_is_mass. apply (ok_mass st (bw_invariant st H)).
Qed.

(** Rows are full: the emitted tokens fill rows [0 .. row-1] and [R - rem]
    positions of the current row. *)
Theorem bw_rows_full : forall st,
  wreachable st -> w_emitted st = w_row st * R + (R - w_rem st) /\ 0 < w_rem st <= R.
Proof.
  intros st H. pose proof (bw_invariant st H) as Hok.
  split; [apply (ok_rows st Hok)|apply (ok_rem st Hok)].
Qed.

(** The arrival row of an occurrence is fixed once it has arrived. *)
Theorem bw_arows_prefix : forall st st',
  wstep st st' -> exists l, w_arows st' = w_arows st ++ l.
Proof.
  intros st st' Hs; destruct Hs as [st k _ _ _|st b1 s b2 m _ _ _ _ _].
  - exists (repeat (w_row st) k); reflexivity.
  - exists []; simpl; rewrite app_nil_r; reflexivity.
Qed.

End BoundedWait.
