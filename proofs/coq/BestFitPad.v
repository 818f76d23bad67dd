(** * BestFitPad: a loader that pads instead of cropping starves once its buffer holds only long spans.

    The [bestfit-pad] policy (nanochat's SFT loader) refills its buffer like
    the family (batches appended while fewer than [B] spans are buffered),
    places a buffered document that fits the rest of the row, and when none
    fits pads the rest of the row instead of cropping.  A document longer
    than the row ([R < len]) therefore never leaves the buffer; once the
    buffer holds only such documents every row is padding.

    This file states a permissive step relation [pstep] and proves, for every
    reachable state with a first all-padding row [s] ([bfp_starvation]):

    - the occurrences placed are exactly the short ([len <= R]) arrivals, and
      the arrivals stopped with the refill batch that brought the [B]-th long
      occurrence: [long_count lastn < B <= long_count narr], where [lastn] is
      the arrival count before the last batch;
    - with [M] the tokens and [P] the number of those short arrivals:
      [M <= s * R], [s <= P], and [s = 0] or [(s - 1) * (R + 1) < 2 * M]
      (two consecutive rows before [s] hold more than [R] tokens together:
      the first placement of a row did not fit the end of the row before);
    - [bfp_starved_absorbing]: after row [s] nothing changes but the row
      index: every further row is padding.
    [bfp_placed_count] and [bfp_placed_tokens] restate [P] and [M] as the
    count and the token sum of the short occurrences among the first [narr].

    The relation is more permissive than the engines:
    - an arrival appends a batch of [1 <= k <= bmax] new occurrences only
      while fewer than [B] spans are buffered;
    - a placement may take ANY buffered span that fits the rest of the row
      (the engines take the largest, ties to the earliest); the row is
      complete when it is full;
    - a padding step needs at least [B] buffered spans (the loader refilled
      first: the stream did not run dry) and no buffered span fitting the
      rest of the row; it completes the row.  A padding step at an empty row
      is an all-padding row; the first one is recorded in [p_starved]. *)

From Coq Require Import Arith Lia List Bool Permutation.
Import ListNotations.
From PackingTheory Require Import Defs.

Record pstate : Type := mkP {
  p_narr    : nat;            (* arrivals so far *)
  p_lastn   : nat;            (* arrivals before the last batch *)
  p_buf     : buffer;         (* spans in buffer order *)
  p_row     : nat;            (* index of the row being filled *)
  p_fill    : nat;            (* positions of that row already filled *)
  p_placed  : list nat;       (* occurrences placed, newest first *)
  p_done    : nat;            (* tokens placed in complete rows *)
  p_last    : nat;            (* tokens placed in the last complete row *)
  p_starved : option nat      (* the first all-padding row, once there is one *)
}.

Lemma sum_len_perm : forall (len : nat -> nat) l l',
  Permutation l l' -> sum_len len l = sum_len len l'.
Proof.
  intros len l l' H; induction H; simpl; lia.
Qed.

Lemma incr_ids_remove : forall b1 s b2, incr_ids (b1 ++ s :: b2) -> incr_ids (b1 ++ b2).
Proof.
  intros b1 s b2 H. apply incr_ids_app in H. destruct H as [H1 [[_ H2] H3]].
  apply incr_ids_app. split; [exact H1|split; [exact H2|]].
  intros x y Hx Hy. apply H3; [exact Hx|right; exact Hy].
Qed.

Section BestFitPad.

Variables (R B bmax : nat) (len : nat -> nat).

Definition shortb (j : nat) : bool := len j <=? R.

(** The short occurrences among the first [n] arrivals. *)
Definition shorts (n : nat) : list nat := filter shortb (seq 0 n).

Definition pfresh (n k : nat) : buffer := map (fun j => mkSpan j (len j) (len j)) (seq n k).

Definition pinit : pstate := mkP 0 0 [] 0 0 [] 0 0 None.

Definition first_empty (st : pstate) : option nat :=
  match p_starved st with
  | Some s => Some s
  | None => if p_fill st =? 0 then Some (p_row st) else None
  end.

Inductive pstep : pstate -> pstate -> Prop :=
| pstep_arrive : forall st k,
    length (p_buf st) < B -> 1 <= k <= bmax ->
    (forall j, p_narr st <= j < p_narr st + k -> 0 < len j) ->
    pstep st (mkP (p_narr st + k) (p_narr st) (p_buf st ++ pfresh (p_narr st) k) (p_row st)
                  (p_fill st) (p_placed st) (p_done st) (p_last st) (p_starved st))
| pstep_place_full : forall st b1 s b2,
    p_buf st = b1 ++ s :: b2 -> p_fill st + cur s = R ->
    pstep st (mkP (p_narr st) (p_lastn st) (b1 ++ b2) (S (p_row st)) 0 (sid s :: p_placed st)
                  (p_done st + R) R (p_starved st))
| pstep_place : forall st b1 s b2,
    p_buf st = b1 ++ s :: b2 -> p_fill st + cur s < R ->
    pstep st (mkP (p_narr st) (p_lastn st) (b1 ++ b2) (p_row st) (p_fill st + cur s)
                  (sid s :: p_placed st) (p_done st) (p_last st) (p_starved st))
| pstep_pad : forall st,
    B <= length (p_buf st) ->
    (forall s, In s (p_buf st) -> R < p_fill st + cur s) ->
    pstep st (mkP (p_narr st) (p_lastn st) (p_buf st) (S (p_row st)) 0 (p_placed st)
                  (p_done st + p_fill st) (p_fill st) (first_empty st)).

Inductive preach : pstate -> Prop :=
| preach_init : preach pinit
| preach_step : forall st st', preach st -> pstep st st' -> preach st'.

Definition in_buf (j : nat) (b : buffer) : Prop := exists s, In s b /\ sid s = j.

(** Before the first all-padding row: every complete row holds a placement, and two
    consecutive complete rows hold more than [R] tokens together. *)
Definition healthy (st : pstate) : Prop :=
  p_row st + (if p_fill st =? 0 then 0 else 1) <= length (p_placed st) /\
  (forall r, p_row st = S r -> r * (R + 1) + p_last st <= 2 * p_done st) /\
  (1 <= p_row st -> 0 < p_fill st -> R + 1 <= p_last st + p_fill st) /\
  (1 <= p_row st -> p_fill st = 0 ->
     p_last st = R \/ (B <= length (p_buf st) /\ forall s, In s (p_buf st) -> R < p_last st + cur s)) /\
  (1 <= p_row st -> 1 <= p_last st).

(** From the first all-padding row [s] on. *)
Definition starved_at (st : pstate) (s : nat) : Prop :=
  p_fill st = 0 /\ B <= length (p_buf st) /\ (forall t, In t (p_buf st) -> R < cur t) /\
  s <= length (p_placed st) /\ sum_len len (p_placed st) <= s * R /\
  (s = 0 \/ (s - 1) * (R + 1) < 2 * sum_len len (p_placed st)).

Record pok (st : pstate) : Prop := {
  ok_fill : p_fill st <= R;
  ok_spans : forall s, In s (p_buf st) ->
               orig s = len (sid s) /\ cur s = len (sid s) /\ sid s < p_narr st /\ 0 < len (sid s);
  ok_incr : incr_ids (p_buf st);
  ok_placed : forall j, In j (p_placed st) -> j < p_narr st /\ len j <= R;
  ok_nodup : NoDup (p_placed st);
  ok_cover : forall j, j < p_narr st -> In j (p_placed st) \/ in_buf j (p_buf st);
  ok_disjoint : forall j, In j (p_placed st) -> ~ in_buf j (p_buf st);
  ok_batch : p_lastn st <= p_narr st <= p_lastn st + bmax;
  ok_lastn : p_narr st = 0 \/ long_count R len (p_lastn st) < B;
  ok_sum : p_done st + p_fill st = sum_len len (p_placed st);
  ok_done : p_done st <= p_row st * R;
  ok_healthy : p_starved st = None -> healthy st;
  ok_starved : forall s, p_starved st = Some s -> starved_at st s
}.

(** ** Counting the buffer. *)

Lemma long_not_placed : forall st j, pok st -> In j (p_placed st) -> len j <= R.
Proof. intros st j Hok Hj. apply (ok_placed st Hok j Hj). Qed.

Lemma long_count_le_buf : forall st n, pok st -> n <= p_narr st ->
  long_count R len n <= length (p_buf st).
Proof.
  intros st n Hok Hn. unfold long_count.
  rewrite <- (map_length sid (p_buf st)).
  apply NoDup_incl_length.
  - apply NoDup_filter, seq_NoDup.
  - intros j Hj. apply filter_In in Hj. destruct Hj as [Hj Hl].
    apply in_seq in Hj. unfold longb in Hl. apply Nat.ltb_lt in Hl.
    destruct (ok_cover st Hok j ltac:(lia)) as [Hp|[s [Hs Hsid]]].
    + pose proof (long_not_placed st j Hok Hp). lia.
    + apply in_map_iff. exists s. split; assumption.
Qed.

Lemma buf_le_long_count : forall st, pok st -> (forall t, In t (p_buf st) -> R < cur t) ->
  length (p_buf st) <= long_count R len (p_narr st).
Proof.
  intros st Hok Hlong. unfold long_count.
  rewrite <- (map_length sid (p_buf st)).
  apply NoDup_incl_length.
  - apply incr_ids_NoDup, (ok_incr st Hok).
  - intros j Hj. apply in_map_iff in Hj. destruct Hj as [s [<- Hs]].
    destruct (ok_spans st Hok s Hs) as [_ [Hc [Hn _]]].
    apply filter_In. split; [apply in_seq; lia|].
    unfold longb. apply Nat.ltb_lt. specialize (Hlong s Hs). lia.
Qed.

(** ** The invariant holds initially and is preserved. *)

Lemma pok_init : pok pinit.
Proof.
  constructor; simpl.
  - lia.
  - intros s [].
  - exact I.
  - intros j [].
  - constructor.
  - intros j Hj; lia.
  - intros j [].
  - lia.
  - left; reflexivity.
  - reflexivity.
  - lia.
  - intros _. unfold healthy; simpl. split; [lia|split; [intros r Hr; discriminate|]].
    split; [lia|split; intros; lia].
  - intros s Hs; discriminate.
Qed.

Lemma pfresh_in : forall n k s,
  In s (pfresh n k) -> n <= sid s < n + k /\ s = mkSpan (sid s) (len (sid s)) (len (sid s)).
Proof.
  intros n k s Hs. unfold pfresh in Hs. apply in_map_iff in Hs.
  destruct Hs as [j [<- Hj]]. apply in_seq in Hj. simpl. split; [lia|reflexivity].
Qed.

Lemma incr_ids_pfresh : forall k n, incr_ids (pfresh n k).
Proof.
  induction k as [|k IH]; intros n; simpl; [exact I|].
  split; [|apply IH].
  intros u Hu. apply pfresh_in in Hu. simpl in Hu. lia.
Qed.

Lemma pok_arrive : forall st k,
  pok st -> length (p_buf st) < B -> 1 <= k <= bmax ->
  (forall j, p_narr st <= j < p_narr st + k -> 0 < len j) ->
  pok (mkP (p_narr st + k) (p_narr st) (p_buf st ++ pfresh (p_narr st) k) (p_row st)
           (p_fill st) (p_placed st) (p_done st) (p_last st) (p_starved st)).
Proof.
  intros st k Hok Hlen Hk Hpos.
  pose proof (long_count_le_buf st (p_narr st) Hok (le_n _)) as Hlc.
  constructor; simpl.
  - exact (ok_fill st Hok).
  - intros s Hs. apply in_app_or in Hs. destruct Hs as [Hs|Hs].
    + destruct (ok_spans st Hok s Hs) as [H1 [H2 [H3 H4]]]. repeat split; try assumption; lia.
    + destruct (pfresh_in _ _ s Hs) as [Hr Heq]. rewrite Heq; simpl.
      repeat split; try reflexivity; [lia|apply Hpos; lia].
  - apply incr_ids_app. split; [exact (ok_incr st Hok)|split; [apply incr_ids_pfresh|]].
    intros x y Hx Hy. destruct (ok_spans st Hok x Hx) as [_ [_ [Hxn _]]].
    destruct (pfresh_in _ _ y Hy) as [Hy' _]. lia.
  - intros j Hj. destruct (ok_placed st Hok j Hj). split; [lia|assumption].
  - exact (ok_nodup st Hok).
  - intros j Hj. destruct (Nat.lt_ge_cases j (p_narr st)) as [Hlt|Hge].
    + destruct (ok_cover st Hok j Hlt) as [Hp|[s [Hs Hsid]]]; [left; exact Hp|].
      right. exists s. split; [apply in_or_app; left; exact Hs|exact Hsid].
    + right. exists (mkSpan j (len j) (len j)). split; [|reflexivity].
      apply in_or_app; right. unfold pfresh. apply in_map_iff. exists j.
      split; [reflexivity|apply in_seq; lia].
  - intros j Hj [s [Hs Hsid]]. apply in_app_or in Hs. destruct Hs as [Hs|Hs].
    + apply (ok_disjoint st Hok j Hj). exists s; split; assumption.
    + destruct (pfresh_in _ _ s Hs) as [Hr _]. destruct (ok_placed st Hok j Hj). lia.
  - lia.
  - right. lia.
  - exact (ok_sum st Hok).
  - exact (ok_done st Hok).
  - intros Hn. destruct (ok_healthy st Hok Hn) as [H1 [H2 [H3 [H4 H5]]]].
    unfold healthy; simpl. repeat split; try assumption.
    intros Hr Hf. destruct (H4 Hr Hf) as [HR|[HB _]]; [left; exact HR|lia].
  - intros s Hs. destruct (ok_starved st Hok s Hs) as [_ [HB _]]. lia.
Qed.

Lemma place_common : forall st b1 s b2,
  pok st -> p_buf st = b1 ++ s :: b2 -> p_fill st + cur s <= R ->
  (forall j, In j (sid s :: p_placed st) -> j < p_narr st /\ len j <= R) /\
  NoDup (sid s :: p_placed st) /\
  (forall j, j < p_narr st -> In j (sid s :: p_placed st) \/ in_buf j (b1 ++ b2)) /\
  (forall j, In j (sid s :: p_placed st) -> ~ in_buf j (b1 ++ b2)) /\
  len (sid s) = cur s /\
  0 < cur s /\ incr_ids (b1 ++ b2) /\
  (forall t, In t (b1 ++ b2) -> In t (p_buf st)).
Proof.
  intros st b1 s b2 Hok Hb Hfit.
  assert (Hin : In s (p_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
  destruct (ok_spans st Hok s Hin) as [_ [Hc [Hn Hp]]].
  pose proof (ok_incr st Hok) as Hi. rewrite Hb in Hi.
  assert (Hsub : forall t, In t (b1 ++ b2) -> In t (p_buf st)).
  { intros t Ht. rewrite Hb. apply in_app_or in Ht. apply in_or_app.
    destruct Ht as [Ht|Ht]; [left; exact Ht|right; right; exact Ht]. }
  assert (Hnot : ~ in_buf (sid s) (b1 ++ b2)).
  { intros [t [Ht Hsid]].
    assert (Ht' : In t (b1 ++ s :: b2)).
    { apply in_app_or in Ht. apply in_or_app. destruct Ht as [Ht|Ht]; [left|right; right]; exact Ht. }
    assert (Hs' : In s (b1 ++ s :: b2)) by (apply in_or_app; right; left; reflexivity).
    pose proof (incr_ids_unique _ t s Hi Ht' Hs' Hsid) as Heq. subst t.
    apply incr_ids_app in Hi. destruct Hi as [_ [[Hs2 _] Hx]].
    apply in_app_or in Ht. destruct Ht as [Ht|Ht].
    - specialize (Hx s s Ht (or_introl eq_refl)). lia.
    - specialize (Hs2 s Ht). lia. }
  split; [|split; [|split; [|split; [|split; [|split; [|split]]]]]].
  - intros j [<-|Hj]; [split; lia|apply (ok_placed st Hok j Hj)].
  - constructor; [|exact (ok_nodup st Hok)].
    intros Hs. apply (ok_disjoint st Hok (sid s) Hs). exists s; split; [exact Hin|reflexivity].
  - intros j Hj. destruct (ok_cover st Hok j Hj) as [Hp'|[t [Ht Hsid]]]; [left; right; exact Hp'|].
    rewrite Hb in Ht. apply in_app_or in Ht. destruct Ht as [Ht|[<-|Ht]].
    + right. exists t. split; [apply in_or_app; left; exact Ht|exact Hsid].
    + left; left; exact Hsid.
    + right. exists t. split; [apply in_or_app; right; exact Ht|exact Hsid].
  - intros j [<-|Hj]; [exact Hnot|].
    intros [t [Ht Hsid]]. apply (ok_disjoint st Hok j Hj). exists t. split; [apply Hsub; exact Ht|exact Hsid].
  - symmetry; exact Hc.
  - lia.
  - exact (incr_ids_remove b1 s b2 Hi).
  - exact Hsub.
Qed.

Lemma pok_place_full : forall st b1 s b2,
  pok st -> p_buf st = b1 ++ s :: b2 -> p_fill st + cur s = R ->
  pok (mkP (p_narr st) (p_lastn st) (b1 ++ b2) (S (p_row st)) 0 (sid s :: p_placed st)
           (p_done st + R) R (p_starved st)).
Proof.
  intros st b1 s b2 Hok Hb Hfit.
  destruct (place_common st b1 s b2 Hok Hb ltac:(lia))
    as [Hpl [Hnd [Hcov [Hdis [Hsum [Hpos [Hinc Hsub]]]]]]].
  pose proof (ok_sum st Hok) as Hs0. pose proof (ok_done st Hok) as Hd0.
  constructor; simpl.
  - lia.
  - intros t Ht. destruct (ok_spans st Hok t (Hsub t Ht)) as [H1 [H2 [H3 H4]]]. repeat split; assumption.
  - exact Hinc.
  - exact Hpl.
  - exact Hnd.
  - exact Hcov.
  - exact Hdis.
  - exact (ok_batch st Hok).
  - exact (ok_lastn st Hok).
  - lia.
  - lia.
  - intros Hn. destruct (ok_healthy st Hok Hn) as [H1 [H2 [H3 [H4 H5]]]].
    unfold healthy; simpl. split; [|split; [|split; [|split]]].
    + destruct (p_fill st =? 0); simpl in H1; lia.
    + intros r Hr. injection Hr as <-. destruct (p_row st) as [|r'] eqn:Er; [lia|].
      specialize (H2 r' eq_refl). specialize (H5 ltac:(lia)).
      remember (r' * (R + 1)) as X. simpl. rewrite <- HeqX. lia.
    + intros _ H0; lia.
    + intros _ _; left; reflexivity.
    + intros _; lia.
  - intros x Hx. destruct (ok_starved st Hok x Hx) as [Hf0 [_ [Hlong _]]].
    assert (Hin : In s (p_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
    specialize (Hlong s Hin). lia.
Qed.

Lemma pok_place : forall st b1 s b2,
  pok st -> p_buf st = b1 ++ s :: b2 -> p_fill st + cur s < R ->
  pok (mkP (p_narr st) (p_lastn st) (b1 ++ b2) (p_row st) (p_fill st + cur s)
           (sid s :: p_placed st) (p_done st) (p_last st) (p_starved st)).
Proof.
  intros st b1 s b2 Hok Hb Hfit.
  destruct (place_common st b1 s b2 Hok Hb ltac:(lia))
    as [Hpl [Hnd [Hcov [Hdis [Hsum [Hpos [Hinc Hsub]]]]]]].
  pose proof (ok_sum st Hok) as Hs0. pose proof (ok_done st Hok) as Hd0.
  assert (Hin : In s (p_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
  constructor; simpl.
  - lia.
  - intros t Ht. destruct (ok_spans st Hok t (Hsub t Ht)) as [H1 [H2 [H3 H4]]]. repeat split; assumption.
  - exact Hinc.
  - exact Hpl.
  - exact Hnd.
  - exact Hcov.
  - exact Hdis.
  - exact (ok_batch st Hok).
  - exact (ok_lastn st Hok).
  - lia.
  - exact Hd0.
  - intros Hn. destruct (ok_healthy st Hok Hn) as [H1 [H2 [H3 [H4 H5]]]].
    unfold healthy; simpl. split; [|split; [|split; [|split]]].
    + replace (p_fill st + cur s =? 0) with false by (symmetry; apply Nat.eqb_neq; lia).
      destruct (p_fill st =? 0); simpl in H1; lia.
    + exact H2.
    + intros Hr _. destruct (Nat.eq_dec (p_fill st) 0) as [Hf|Hf].
      * destruct (H4 Hr Hf) as [HR|[_ Hall]]; [lia|].
        specialize (Hall s Hin). lia.
      * specialize (H3 Hr ltac:(lia)). lia.
    + intros _ H0; lia.
    + exact H5.
  - intros x Hx. destruct (ok_starved st Hok x Hx) as [Hf0 [_ [Hlong _]]].
    specialize (Hlong s Hin). lia.
Qed.

Lemma pok_pad : forall st,
  pok st -> B <= length (p_buf st) -> (forall s, In s (p_buf st) -> R < p_fill st + cur s) ->
  pok (mkP (p_narr st) (p_lastn st) (p_buf st) (S (p_row st)) 0 (p_placed st)
           (p_done st + p_fill st) (p_fill st) (first_empty st)).
Proof.
  intros st Hok HB Hnone.
  pose proof (ok_sum st Hok) as Hs0. pose proof (ok_done st Hok) as Hd0.
  pose proof (ok_fill st Hok) as Hf0.
  constructor; simpl.
  - lia.
  - exact (ok_spans st Hok).
  - exact (ok_incr st Hok).
  - exact (ok_placed st Hok).
  - exact (ok_nodup st Hok).
  - exact (ok_cover st Hok).
  - exact (ok_disjoint st Hok).
  - exact (ok_batch st Hok).
  - exact (ok_lastn st Hok).
  - lia.
  - lia.
  - unfold first_empty. intros Hn.
    destruct (p_starved st) as [x|] eqn:Es; [discriminate|].
    destruct (p_fill st =? 0) eqn:Ef; [discriminate|]. apply Nat.eqb_neq in Ef.
    destruct (ok_healthy st Hok Es) as [H1 [H2 [H3 [H4 H5]]]].
    unfold healthy; simpl. split; [|split; [|split; [|split]]].
    + replace (p_fill st =? 0) with false in H1 by (symmetry; apply Nat.eqb_neq; exact Ef). simpl in H1. lia.
    + intros r Hr. injection Hr as <-. destruct (p_row st) as [|r'] eqn:Er; [lia|].
      specialize (H2 r' eq_refl). specialize (H3 ltac:(lia) ltac:(lia)).
      remember (r' * (R + 1)) as X. simpl. rewrite <- HeqX. lia.
    + intros _ H0; lia.
    + intros _ _. right. split; [exact HB|exact Hnone].
    + intros _; lia.
  - intros x. unfold first_empty. destruct (p_starved st) as [y|] eqn:Es.
    + intros Hx. injection Hx as <-. destruct (ok_starved st Hok y Es) as [Hf [_ [Hl Hrest]]].
      unfold starved_at; simpl. split; [reflexivity|split; [exact HB|split; [exact Hl|exact Hrest]]].
    + destruct (p_fill st =? 0) eqn:Ef; [|discriminate]. apply Nat.eqb_eq in Ef.
      intros Hx. injection Hx as <-.
      destruct (ok_healthy st Hok Es) as [H1 [H2 [H3 [H4 H5]]]].
      rewrite Ef in H1. simpl in H1.
      unfold starved_at; simpl. split; [reflexivity|split; [exact HB|split]].
      * intros t Ht. specialize (Hnone t Ht). lia.
      * split; [lia|split; [rewrite <- Hs0, Ef; lia|]].
        destruct (p_row st) as [|r] eqn:Er; [left; reflexivity|right].
        specialize (H2 r eq_refl). specialize (H5 ltac:(lia)).
        rewrite <- Hs0, Ef. replace (S r - 1) with r by lia. lia.
Qed.

Lemma pok_step : forall st st', pok st -> pstep st st' -> pok st'.
Proof.
  intros st st' Hok Hs. destruct Hs.
  - apply pok_arrive; assumption.
  - apply pok_place_full; assumption.
  - apply pok_place; assumption.
  - apply pok_pad; assumption.
Qed.

Theorem bfp_invariant : forall st, preach st -> pok st.
Proof.
  intros st H. induction H as [|st st' _ IH Hs]; [exact pok_init|exact (pok_step st st' IH Hs)].
Qed.

(** ** The starvation bound. *)

Lemma placed_are_shorts : forall st, pok st -> (forall t, In t (p_buf st) -> R < cur t) ->
  forall j, In j (p_placed st) <-> In j (shorts (p_narr st)).
Proof.
  intros st Hok Hlong j. unfold shorts. rewrite filter_In, in_seq. unfold shortb. rewrite Nat.leb_le.
  split.
  - intros Hj. destruct (ok_placed st Hok j Hj). split; [lia|assumption].
  - intros [Hj Hs]. destruct (ok_cover st Hok j ltac:(lia)) as [Hp|[t [Ht Hsid]]]; [exact Hp|].
    specialize (Hlong t Ht). destruct (ok_spans st Hok t Ht) as [_ [Hc _]]. subst j. lia.
Qed.

Theorem bfp_starvation : forall st s, preach st -> p_starved st = Some s ->
  (forall j, In j (p_placed st) <-> In j (shorts (p_narr st))) /\ NoDup (p_placed st) /\
  (forall t, In t (p_buf st) -> R < cur t) /\
  (p_narr st = 0 \/ long_count R len (p_lastn st) < B) /\ B <= long_count R len (p_narr st) /\
  p_lastn st <= p_narr st <= p_lastn st + bmax /\
  sum_len len (p_placed st) <= s * R /\ s <= length (p_placed st) /\
  (s = 0 \/ (s - 1) * (R + 1) < 2 * sum_len len (p_placed st)).
Proof.
  intros st s Hr Hs. pose proof (bfp_invariant st Hr) as Hok.
  destruct (ok_starved st Hok s Hs) as [_ [HB [Hlong [HP [HM Hup]]]]].
  split; [exact (placed_are_shorts st Hok Hlong)|].
  split; [exact (ok_nodup st Hok)|split; [exact Hlong|split; [exact (ok_lastn st Hok)|]]].
  split; [pose proof (buf_le_long_count st Hok Hlong); lia|].
  split; [exact (ok_batch st Hok)|split; [exact HM|split; [exact HP|exact Hup]]].
Qed.

Theorem bfp_placed_count : forall st s, preach st -> p_starved st = Some s ->
  length (p_placed st) = length (shorts (p_narr st)).
Proof.
  intros st s Hr Hs. destruct (bfp_starvation st s Hr Hs) as [Hiff [Hnd _]].
  apply Permutation_length, NoDup_Permutation; [exact Hnd|apply NoDup_filter, seq_NoDup|exact Hiff].
Qed.

Theorem bfp_placed_tokens : forall st s, preach st -> p_starved st = Some s ->
  sum_len len (p_placed st) = sum_len len (shorts (p_narr st)).
Proof.
  intros st s Hr Hs. destruct (bfp_starvation st s Hr Hs) as [Hiff [Hnd _]].
  apply sum_len_perm, NoDup_Permutation; [exact Hnd|apply NoDup_filter, seq_NoDup|exact Hiff].
Qed.

Theorem bfp_starved_absorbing : forall st st' s, preach st -> p_starved st = Some s -> pstep st st' ->
  p_buf st' = p_buf st /\ p_placed st' = p_placed st /\ p_narr st' = p_narr st /\
  p_fill st' = 0 /\ p_row st' = S (p_row st) /\ p_starved st' = Some s.
Proof.
  intros st st' s Hr Hs Hstep. pose proof (bfp_invariant st Hr) as Hok.
  destruct (ok_starved st Hok s Hs) as [Hf [HB [Hlong _]]].
  destruct Hstep as [st k Hlen _ _|st b1 t b2 Hb Hfit|st b1 t b2 Hb Hfit|st _ _].
  - lia.
  - assert (Hin : In t (p_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
    specialize (Hlong t Hin). lia.
  - assert (Hin : In t (p_buf st)) by (rewrite Hb; apply in_or_app; right; left; reflexivity).
    specialize (Hlong t Hin). lia.
  - simpl. unfold first_empty. rewrite Hs. repeat split; assumption.
Qed.

(** Only a long span keeps an empty row from a placement: an all-padding row needs a buffer
    of at least [B] spans, every one longer than [R]. *)
Theorem bfp_empty_row_all_long : forall st,
  B <= length (p_buf st) -> p_fill st = 0 -> (forall s, In s (p_buf st) -> R < p_fill st + cur s) ->
  forall s, In s (p_buf st) -> R < cur s.
Proof. intros st _ Hf H s Hs. specialize (H s Hs). lia. Qed.

End BestFitPad.

(** The relation is not vacuous: with [R = 2], [B = 1] and batches of one, a document of 1 token
    then one of 3 tokens give one row (the first document, then padding) and the first
    all-padding row is row 1, where the bound [ceil (M / R) <= s <= min P (...)] is tight
    ([M = 1], [P = 1]). *)
Theorem bfp_starvation_example : exists st,
  preach 2 1 1 (fun j => if j =? 0 then 1 else 3) st /\ p_starved st = Some 1.
Proof.
  pose (len := fun j => if j =? 0 then 1 else 3).
  exists (mkP 2 1 (pfresh len 1 1) 2 0 [0] 1 0 (Some 1)). split; [|reflexivity].
  apply (preach_step _ _ _ _ (mkP 2 1 (pfresh len 1 1) 1 0 [0] 1 1 None)).
  2: { apply (pstep_pad 2 1 1 len (mkP 2 1 (pfresh len 1 1) 1 0 [0] 1 1 None)); cbn; [lia|].
       intros t [<-|[]]; cbn; lia. }
  apply (preach_step _ _ _ _ (mkP 2 1 (pfresh len 1 1) 0 1 [0] 0 0 None)).
  2: { apply (pstep_pad 2 1 1 len (mkP 2 1 (pfresh len 1 1) 0 1 [0] 0 0 None)); cbn; [lia|].
       intros t [<-|[]]; cbn; lia. }
  apply (preach_step _ _ _ _ (mkP 1 0 [] 0 1 [0] 0 0 None)).
  2: { apply (pstep_arrive 2 1 1 len (mkP 1 0 [] 0 1 [0] 0 0 None) 1); cbn; try lia.
       intros j Hj; unfold len; destruct (j =? 0); lia. }
  apply (preach_step _ _ _ _ (mkP 1 0 (pfresh len 0 1) 0 0 [] 0 0 None)).
  2: { apply (pstep_place 2 1 1 len (mkP 1 0 (pfresh len 0 1) 0 0 [] 0 0 None) [] (mkSpan 0 1 1) []);
       cbn; [reflexivity|lia]. }
  apply (preach_step _ _ _ _ pinit); [apply preach_init|].
  apply (pstep_arrive 2 1 1 len pinit 1); cbn; try lia.
  intros j Hj; unfold len; destruct (j =? 0); lia.
Qed.
