(** * Semantics: a permissive step relation for the streaming packer.

    The relation is strictly more permissive than the real loader:
    - an arrival may happen at any time (the loader only refills while
      fewer than [B] spans are buffered); it appends the next occurrence,
      unchanged, at the end of the buffer;
    - a selection is allowed whenever at least [B] spans are buffered and
      may take ANY span whose current length fits some capacity [c <= R],
      or ANY span that is minimal by (current length, occurrence id);
    - after a selection the span is either removed ([step_take]: whole
      selection, or a crop under [discard]) or kept at the same buffer
      position with a strictly smaller positive current length
      ([step_keep]: a crop under [continue]).  Both outcomes are allowed
      for both kinds of selection, so the relation covers both
      continuation semantics at once.

    "Started" is modelled honestly by a history: the list of occurrence
    ids that have been selected at least once (every selection of the
    loader emits at least one token of the selected span when lengths and
    [R] are positive). *)

From Coq Require Import Arith Lia List Bool.
Import ListNotations.
From PackingTheory Require Import Defs.

Record state : Type := mkState {
  narr    : nat;          (* number of arrivals so far *)
  buf     : buffer;       (* the buffer, in buffer order *)
  started : list nat      (* ids of occurrences selected at least once *)
}.

Definition init : state := mkState 0 [] [].

Section Semantics.

Variables (R B : nat) (len : nat -> nat).

(** The fitting rule may take a span that fits some capacity [c <= R]. *)
Definition fits (s : span) : Prop := exists c, c <= R /\ cur s <= c.

Definition selectable (b : buffer) (s : span) : Prop := fits s \/ lexmin b s.

Inductive step : state -> state -> Prop :=
| step_arrive : forall n b h,
    step (mkState n b h)
         (mkState (S n) (b ++ [mkSpan n (len n) (len n)]) h)
| step_take : forall n b1 s b2 h,
    B <= length (b1 ++ s :: b2) ->
    selectable (b1 ++ s :: b2) s ->
    step (mkState n (b1 ++ s :: b2) h)
         (mkState n (b1 ++ b2) (sid s :: h))
| step_keep : forall n b1 s b2 h c',
    B <= length (b1 ++ s :: b2) ->
    selectable (b1 ++ s :: b2) s ->
    0 < c' -> c' < cur s ->
    step (mkState n (b1 ++ s :: b2) h)
         (mkState n (b1 ++ mkSpan (sid s) (orig s) c' :: b2) (sid s :: h)).

Inductive reachable : state -> Prop :=
| reach_init : reachable init
| reach_step : forall st st', reachable st -> step st st' -> reachable st'.

(** Well-formedness of a state: every buffered span belongs to an arrived
    occurrence, carries that occurrence's original length and a current
    length not above it; ids are strictly increasing in buffer order; and
    only arrived occurrences have started. *)
Definition wf (st : state) : Prop :=
  (forall s, In s (buf st) -> sid s < narr st /\ orig s = len (sid s) /\ cur s <= orig s) /\
  incr_ids (buf st) /\
  (forall i, In i (started st) -> i < narr st).

Lemma wf_init : wf init.
Proof.
  unfold wf, init; simpl. repeat split; intros; contradiction.
Qed.

Lemma wf_step : forall st st', wf st -> step st st' -> wf st'.
Proof.
  intros st st' [Hb [Hi Hh]] Hs; destruct Hs; unfold wf in *; simpl in *.
  - split; [|split].
    + intros s Hs; apply in_app_or in Hs; destruct Hs as [Hs|[<-|[]]].
      * specialize (Hb s Hs); lia.
      * simpl; lia.
    + apply incr_ids_app; split; [exact Hi|split; [simpl; tauto|]].
      intros x y Hx [<-|[]]; simpl. specialize (Hb x Hx); lia.
    + intros i Hin; specialize (Hh i Hin); lia.
  - apply incr_ids_app in Hi; destruct Hi as [Hi1 [[_ Hi2] Hi3]].
    split; [|split].
    + intros t Ht; apply Hb; apply in_app_or in Ht; apply in_or_app.
      destruct Ht as [Ht|Ht]; [left; exact Ht|right; right; exact Ht].
    + apply incr_ids_app; split; [exact Hi1|split; [exact Hi2|]].
      intros x y Hx Hy; apply Hi3; [exact Hx|right; exact Hy].
    + intros i [<-|Hin].
      * apply Hb; apply in_or_app; right; left; reflexivity.
      * apply Hh; exact Hin.
  - assert (Hs : In s (b1 ++ s :: b2)) by (apply in_or_app; right; left; reflexivity).
    pose proof (Hb s Hs) as Hbs.
    apply incr_ids_app in Hi; destruct Hi as [Hi1 [[Hi4 Hi2] Hi3]].
    split; [|split].
    + intros t Ht; apply in_app_or in Ht; destruct Ht as [Ht|[<-|Ht]].
      * apply Hb; apply in_or_app; left; exact Ht.
      * simpl; lia.
      * apply Hb; apply in_or_app; right; right; exact Ht.
    + apply incr_ids_app; split; [exact Hi1|split; [simpl; split; [exact Hi4|exact Hi2]|]].
      intros x y Hx [<-|Hy]; simpl.
      * apply Hi3; [exact Hx|left; reflexivity].
      * apply Hi3; [exact Hx|right; exact Hy].
    + intros i [<-|Hin].
      * apply Hb; exact Hs.
      * apply Hh; exact Hin.
Qed.

Lemma reachable_wf : forall st, reachable st -> wf st.
Proof.
  intros st H; induction H.
  - apply wf_init.
  - apply (wf_step st); assumption.
Qed.

End Semantics.
