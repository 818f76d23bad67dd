import PackingTheory.Defs

/-!
# Semantics: a permissive step relation for the streaming packer

Mirror of `proofs/coq/Semantics.v`.

- an arrival may happen at any time; it appends the next occurrence,
  unchanged, at the end of the buffer;
- a selection is allowed whenever at least `B` spans are buffered and may take
  ANY span whose current length fits some capacity `c ≤ R`, or ANY span that is
  minimal by (current length, occurrence id);
- the selected span is either removed (`Step.take`) or kept at the same buffer
  position with a strictly smaller positive current length (`Step.keep`); both
  outcomes are allowed for both kinds of selection, so the relation covers both
  continuation semantics.

"Started" is modelled by a history: the ids selected at least once.
-/

namespace PackingTheory

structure State where
  narr : Nat
  buf : Buffer
  started : List Nat

def init : State := ⟨0, [], []⟩

/-- The fitting rule may take a span that fits some capacity `c ≤ R`. -/
def fits (R : Nat) (s : Span) : Prop := ∃ c, c ≤ R ∧ s.cur ≤ c

def selectable (R : Nat) (b : Buffer) (s : Span) : Prop := fits R s ∨ lexmin b s

inductive Step (R B : Nat) (len : Nat → Nat) : State → State → Prop
  | step_arrive (n : Nat) (b : Buffer) (h : List Nat) :
      Step R B len ⟨n, b, h⟩ ⟨n + 1, b ++ [Span.mk n (len n) (len n)], h⟩
  | step_take (n : Nat) (b1 : Buffer) (s : Span) (b2 : Buffer) (h : List Nat) :
      B ≤ (b1 ++ s :: b2).length →
      selectable R (b1 ++ s :: b2) s →
      Step R B len ⟨n, b1 ++ s :: b2, h⟩ ⟨n, b1 ++ b2, s.sid :: h⟩
  | step_keep (n : Nat) (b1 : Buffer) (s : Span) (b2 : Buffer) (h : List Nat) (c' : Nat) :
      B ≤ (b1 ++ s :: b2).length →
      selectable R (b1 ++ s :: b2) s →
      0 < c' → c' < s.cur →
      Step R B len ⟨n, b1 ++ s :: b2, h⟩ ⟨n, b1 ++ Span.mk s.sid s.orig c' :: b2, s.sid :: h⟩

inductive Reachable (R B : Nat) (len : Nat → Nat) : State → Prop
  | reach_init : Reachable R B len init
  | reach_step {st st' : State} :
      Reachable R B len st → Step R B len st st' → Reachable R B len st'

/-- Well-formedness: buffered spans belong to arrived occurrences, carry their
original length and a current length not above it; ids strictly increase in
buffer order; only arrived occurrences have started. -/
def wf (len : Nat → Nat) (st : State) : Prop :=
  (∀ s, s ∈ st.buf → s.sid < st.narr ∧ s.orig = len s.sid ∧ s.cur ≤ s.orig) ∧
  incrIds st.buf ∧
  (∀ i, i ∈ st.started → i < st.narr)

theorem wf_init (len : Nat → Nat) : wf len init := by
  show (∀ s, s ∈ ([] : Buffer) → s.sid < 0 ∧ s.orig = len s.sid ∧ s.cur ≤ s.orig) ∧
    incrIds ([] : Buffer) ∧ (∀ i, i ∈ ([] : List Nat) → i < 0)
  refine ⟨?_, ?_, ?_⟩
  · intro s hs
    cases hs
  · exact trivial
  · intro i hi
    cases hi

theorem wf_step (R B : Nat) (len : Nat → Nat) (st st' : State)
    (hwf : wf len st) (hs : Step R B len st st') : wf len st' := by
  obtain ⟨hb, hi, hh⟩ := hwf
  cases hs with
  | step_arrive n b h =>
    have hb' : ∀ s, s ∈ b → s.sid < n ∧ s.orig = len s.sid ∧ s.cur ≤ s.orig := hb
    have hi' : incrIds b := hi
    have hh' : ∀ i, i ∈ h → i < n := hh
    show (∀ s, s ∈ b ++ [Span.mk n (len n) (len n)] →
            s.sid < n + 1 ∧ s.orig = len s.sid ∧ s.cur ≤ s.orig) ∧
         incrIds (b ++ [Span.mk n (len n) (len n)]) ∧ (∀ i, i ∈ h → i < n + 1)
    refine ⟨?_, ?_, ?_⟩
    · intro s hs
      cases List.mem_append.mp hs with
      | inl hs =>
        obtain ⟨h1, h2, h3⟩ := hb' s hs
        exact ⟨by omega, h2, h3⟩
      | inr hs =>
        rw [List.mem_singleton] at hs
        rw [hs]
        exact ⟨Nat.lt_succ_self n, rfl, Nat.le_refl _⟩
    · apply (incr_ids_app b [Span.mk n (len n) (len n)]).mpr
      refine ⟨hi', ⟨fun u hu => by cases hu, trivial⟩, ?_⟩
      intro x y hx hy
      rw [List.mem_singleton] at hy
      rw [hy]
      exact (hb' x hx).1
    · intro i hi
      have := hh' i hi
      omega
  | step_take n b1 s b2 h _ _ =>
    have hb' : ∀ t, t ∈ b1 ++ s :: b2 →
        t.sid < n ∧ t.orig = len t.sid ∧ t.cur ≤ t.orig := hb
    have hi' : incrIds (b1 ++ s :: b2) := hi
    have hh' : ∀ i, i ∈ h → i < n := hh
    obtain ⟨hi1, hi2, hi3⟩ := (incr_ids_app b1 (s :: b2)).mp hi'
    have hi2' : (∀ u, u ∈ b2 → s.sid < u.sid) ∧ incrIds b2 := hi2
    have hsin : s ∈ b1 ++ s :: b2 := List.mem_append.mpr (Or.inr (List.Mem.head _))
    show (∀ t, t ∈ b1 ++ b2 → t.sid < n ∧ t.orig = len t.sid ∧ t.cur ≤ t.orig) ∧
         incrIds (b1 ++ b2) ∧ (∀ i, i ∈ s.sid :: h → i < n)
    refine ⟨?_, ?_, ?_⟩
    · intro t ht
      apply hb'
      cases List.mem_append.mp ht with
      | inl ht => exact List.mem_append.mpr (Or.inl ht)
      | inr ht => exact List.mem_append.mpr (Or.inr (List.Mem.tail _ ht))
    · apply (incr_ids_app b1 b2).mpr
      refine ⟨hi1, hi2'.2, ?_⟩
      intro x y hx hy
      exact hi3 x y hx (List.Mem.tail _ hy)
    · intro i hi
      rw [List.mem_cons] at hi
      cases hi with
      | inl hi =>
        rw [hi]
        exact (hb' s hsin).1
      | inr hi => exact hh' i hi
  | step_keep n b1 s b2 h c' _ _ _ hc2 =>
    have hb' : ∀ t, t ∈ b1 ++ s :: b2 →
        t.sid < n ∧ t.orig = len t.sid ∧ t.cur ≤ t.orig := hb
    have hi' : incrIds (b1 ++ s :: b2) := hi
    have hh' : ∀ i, i ∈ h → i < n := hh
    have hsin : s ∈ b1 ++ s :: b2 := List.mem_append.mpr (Or.inr (List.Mem.head _))
    obtain ⟨hs1, hs2, hs3⟩ := hb' s hsin
    obtain ⟨hi1, hi2, hi3⟩ := (incr_ids_app b1 (s :: b2)).mp hi'
    have hi2' : (∀ u, u ∈ b2 → s.sid < u.sid) ∧ incrIds b2 := hi2
    show (∀ t, t ∈ b1 ++ Span.mk s.sid s.orig c' :: b2 →
            t.sid < n ∧ t.orig = len t.sid ∧ t.cur ≤ t.orig) ∧
         incrIds (b1 ++ Span.mk s.sid s.orig c' :: b2) ∧ (∀ i, i ∈ s.sid :: h → i < n)
    refine ⟨?_, ?_, ?_⟩
    · intro t ht
      cases List.mem_append.mp ht with
      | inl ht => exact hb' t (List.mem_append.mpr (Or.inl ht))
      | inr ht =>
        rw [List.mem_cons] at ht
        cases ht with
        | inl ht =>
          rw [ht]
          exact ⟨hs1, hs2, by show c' ≤ s.orig; omega⟩
        | inr ht => exact hb' t (List.mem_append.mpr (Or.inr (List.Mem.tail _ ht)))
    · apply (incr_ids_app b1 (Span.mk s.sid s.orig c' :: b2)).mpr
      refine ⟨hi1, ⟨hi2'.1, hi2'.2⟩, ?_⟩
      intro x y hx hy
      rw [List.mem_cons] at hy
      cases hy with
      | inl hy =>
        rw [hy]
        exact hi3 x s hx (List.Mem.head _)
      | inr hy => exact hi3 x y hx (List.Mem.tail _ hy)
    · intro i hi
      rw [List.mem_cons] at hi
      cases hi with
      | inl hi =>
        rw [hi]
        exact hs1
      | inr hi => exact hh' i hi

theorem reachable_wf (R B : Nat) (len : Nat → Nat) (st : State)
    (h : Reachable R B len st) : wf len st := by
  induction h with
  | reach_init => exact wf_init len
  | reach_step _ hs ih => exact wf_step R B len _ _ ih hs

end PackingTheory
