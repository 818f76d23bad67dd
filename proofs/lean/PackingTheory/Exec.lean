import PackingTheory.Defs
import PackingTheory.Semantics
import PackingTheory.KeyLemma
import PackingTheory.Invariant

/-!
# Exec: the loader's actual deterministic rule, and its refinement

Mirror of `proofs/coq/Exec.v`. `select` implements the real rule (largest
fitting span, ties to the earliest; otherwise the shortest span, ties to the
earliest, cropped to the row's remaining positions); `run` refills before every
selection while fewer than `B` spans are buffered, one batch at a time (batch
sizes cycled; a batch never takes more arrivals than remain) and stops at the
first selection boundary where the buffer still holds fewer than `B` spans.

Every exec arrival and selection is a `Step` of the permissive relation, so
`run` only produces reachable states (`run_reachable`) and the main theorem
applies to it (`run_protected`).

Differences in form (not in meaning) from the Coq file: the recursive choice
functions delegate their case split to the helpers `pickFit` / `pickShort`,
`select` to `selectWith`, and `removeAt` / `replaceAt` / `nthErr` are defined
by recursion instead of through `firstn` / `skipn` / `nth_error`.
-/

namespace PackingTheory

inductive Policy where
  | Discard
  | Continue
  deriving DecidableEq, Repr

structure XState where
  narr : Nat
  buf : Buffer
  started : List Nat
  row : Nat
  rem : Nat
  batch : Nat

/-- One selection: row, offset, occurrence, source start, emitted tokens, crop flag. -/
structure Event where
  row : Nat
  offset : Nat
  occ : Nat
  start : Nat
  emitted : Nat
  crop : Bool

inductive StopReason where
  | exhausted
  | outOfFuel
  | noSpan

structure Result where
  state : XState
  trace : List Event
  stop : StopReason

theorem opt_cases {α β : Type} (o : Option (α × β)) : o = none ∨ ∃ a b, o = some (a, b) := by
  cases o with
  | none => exact Or.inl rfl
  | some p => exact Or.inr ⟨p.1, p.2, rfl⟩

/-! ## The choice functions -/

def pickFit (rem : Nat) (s : Span) : Option (Nat × Span) → Option (Nat × Span)
  | some (k, u) => if s.cur ≤ rem ∧ u.cur ≤ s.cur then some (0, s) else some (k + 1, u)
  | none => if s.cur ≤ rem then some (0, s) else none

/-- Largest span with `cur ≤ rem`; ties go to the earliest. -/
def bestFit (rem : Nat) : Buffer → Option (Nat × Span)
  | [] => none
  | s :: t => pickFit rem s (bestFit rem t)

def pickShort (s : Span) : Option (Nat × Span) → Option (Nat × Span)
  | some (k, u) => if u.cur < s.cur then some (k + 1, u) else some (0, s)
  | none => some (0, s)

/-- Shortest span; ties go to the earliest. -/
def shortest : Buffer → Option (Nat × Span)
  | [] => none
  | s :: t => pickShort s (shortest t)

def nthErr : Buffer → Nat → Option Span
  | [], _ => none
  | x :: _, 0 => some x
  | _ :: t, k + 1 => nthErr t k

def removeAt : Nat → Buffer → Buffer
  | _, [] => []
  | 0, _ :: t => t
  | k + 1, x :: t => x :: removeAt k t

def replaceAt : Nat → Span → Buffer → Buffer
  | _, _, [] => []
  | 0, y, _ :: t => y :: t
  | k + 1, y, x :: t => x :: replaceAt k y t

theorem nth_error_split (b : Buffer) (k : Nat) (s : Span) (h : nthErr b k = some s) :
    ∃ l1 l2, b = l1 ++ s :: l2 ∧ l1.length = k := by
  induction b generalizing k with
  | nil =>
    have h' : (none : Option Span) = some s := h
    cases h'
  | cons x t ih =>
    cases k with
    | zero =>
      have h' : some x = some s := h
      have e : x = s := Option.some.inj h'
      exact ⟨[], t, by rw [e, List.nil_append], rfl⟩
    | succ k =>
      have h' : nthErr t k = some s := h
      obtain ⟨l1, l2, e, hl⟩ := ih k h'
      refine ⟨x :: l1, l2, ?_, ?_⟩
      · rw [e, List.cons_append]
      · rw [List.length_cons, hl]

theorem nth_error_In (b : Buffer) (k : Nat) (s : Span) (h : nthErr b k = some s) : s ∈ b := by
  obtain ⟨l1, l2, e, _⟩ := nth_error_split b k s h
  rw [e]
  exact List.mem_append.mpr (Or.inr (List.Mem.head _))

/-! ## Specification of the choice functions -/

theorem best_fit_none (rem : Nat) (b : Buffer) (h : bestFit rem b = none) :
    ∀ t, t ∈ b → rem < t.cur := by
  induction b with
  | nil =>
    intro t ht
    cases ht
  | cons y b ih =>
    intro t ht
    have h0 : pickFit rem y (bestFit rem b) = none := h
    rcases opt_cases (bestFit rem b) with hE | ⟨k, u, hE⟩
    · rw [hE] at h0
      have h1 : (if y.cur ≤ rem then some (0, y) else none) = none := h0
      by_cases hc : y.cur ≤ rem
      · rw [if_pos hc] at h1
        cases h1
      · rw [List.mem_cons] at ht
        cases ht with
        | inl ht =>
          have e : t.cur = y.cur := by rw [ht]
          omega
        | inr ht => exact ih hE t ht
    · rw [hE] at h0
      have h1 : (if y.cur ≤ rem ∧ u.cur ≤ y.cur then some (0, y) else some (k + 1, u)) = none := h0
      exfalso
      by_cases hc : y.cur ≤ rem ∧ u.cur ≤ y.cur
      · rw [if_pos hc] at h1
        cases h1
      · rw [if_neg hc] at h1
        cases h1

theorem best_fit_some (rem : Nat) (b : Buffer) :
    ∀ k s, bestFit rem b = some (k, s) →
      nthErr b k = some s ∧ s.cur ≤ rem ∧
      (∀ t, t ∈ b → t.cur ≤ rem → t.cur ≤ s.cur) ∧
      (∀ j t, j < k → nthErr b j = some t → t.cur ≤ rem → t.cur < s.cur) := by
  induction b with
  | nil =>
    intro k s h
    have h' : (none : Option (Nat × Span)) = some (k, s) := h
    cases h'
  | cons x b ih =>
    intro k s h
    have h0 : pickFit rem x (bestFit rem b) = some (k, s) := h
    rcases opt_cases (bestFit rem b) with hE | ⟨k', u, hE⟩
    · have hnone := best_fit_none rem b hE
      rw [hE] at h0
      have h1 : (if x.cur ≤ rem then some (0, x) else none) = some (k, s) := h0
      by_cases hc : x.cur ≤ rem
      · rw [if_pos hc] at h1
        have e := Option.some.inj h1
        have ek : 0 = k := congrArg Prod.fst e
        have es : x = s := congrArg Prod.snd e
        rw [← ek, ← es]
        refine ⟨rfl, hc, ?_, ?_⟩
        · intro t ht htr
          rw [List.mem_cons] at ht
          cases ht with
          | inl ht =>
            have e2 : t.cur = x.cur := by rw [ht]
            omega
          | inr ht =>
            have := hnone t ht
            omega
        · intro j t hj
          exact absurd hj (by omega)
      · rw [if_neg hc] at h1
        cases h1
    · obtain ⟨H1, H2, H3, H4⟩ := ih k' u hE
      rw [hE] at h0
      have h1 : (if x.cur ≤ rem ∧ u.cur ≤ x.cur then some (0, x) else some (k' + 1, u)) =
          some (k, s) := h0
      by_cases hc : x.cur ≤ rem ∧ u.cur ≤ x.cur
      · rw [if_pos hc] at h1
        have e := Option.some.inj h1
        have ek : 0 = k := congrArg Prod.fst e
        have es : x = s := congrArg Prod.snd e
        rw [← ek, ← es]
        obtain ⟨hc1, hc2⟩ := hc
        refine ⟨rfl, hc1, ?_, ?_⟩
        · intro t ht htr
          rw [List.mem_cons] at ht
          cases ht with
          | inl ht =>
            have e2 : t.cur = x.cur := by rw [ht]
            omega
          | inr ht =>
            have := H3 t ht htr
            omega
        · intro j t hj
          exact absurd hj (by omega)
      · rw [if_neg hc] at h1
        have e := Option.some.inj h1
        have ek : k' + 1 = k := congrArg Prod.fst e
        have es : u = s := congrArg Prod.snd e
        rw [← ek, ← es]
        refine ⟨H1, H2, ?_, ?_⟩
        · intro t ht htr
          rw [List.mem_cons] at ht
          cases ht with
          | inl ht =>
            have e2 : t.cur = x.cur := by rw [ht]
            by_cases hxu : u.cur ≤ x.cur
            · exact (hc ⟨by omega, hxu⟩).elim
            · omega
          | inr ht => exact H3 t ht htr
        · intro j t hj hjt htr
          cases j with
          | zero =>
            have hjt' : some x = some t := hjt
            have e3 : x = t := Option.some.inj hjt'
            have e4 : t.cur = x.cur := by rw [e3]
            by_cases hxu : u.cur ≤ x.cur
            · exact (hc ⟨by omega, hxu⟩).elim
            · omega
          | succ j =>
            exact H4 j t (by omega) hjt htr

theorem shortest_none (b : Buffer) (h : shortest b = none) : b = [] := by
  cases b with
  | nil => rfl
  | cons x t =>
    exfalso
    have h0 : pickShort x (shortest t) = none := h
    rcases opt_cases (shortest t) with hE | ⟨k, u, hE⟩
    · rw [hE] at h0
      have h1 : (some (0, x) : Option (Nat × Span)) = none := h0
      cases h1
    · rw [hE] at h0
      have h1 : (if u.cur < x.cur then some (k + 1, u) else some (0, x)) = none := h0
      by_cases hc : u.cur < x.cur
      · rw [if_pos hc] at h1
        cases h1
      · rw [if_neg hc] at h1
        cases h1

theorem shortest_some (b : Buffer) :
    ∀ k s, shortest b = some (k, s) →
      nthErr b k = some s ∧ (∀ t, t ∈ b → s.cur ≤ t.cur) ∧
      (∀ j t, j < k → nthErr b j = some t → s.cur < t.cur) := by
  induction b with
  | nil =>
    intro k s h
    have h' : (none : Option (Nat × Span)) = some (k, s) := h
    cases h'
  | cons x b ih =>
    intro k s h
    have h0 : pickShort x (shortest b) = some (k, s) := h
    rcases opt_cases (shortest b) with hE | ⟨k', u, hE⟩
    · have hb : b = [] := shortest_none b hE
      rw [hE] at h0
      have h1 : some (0, x) = some (k, s) := h0
      have e := Option.some.inj h1
      have ek : 0 = k := congrArg Prod.fst e
      have es : x = s := congrArg Prod.snd e
      rw [← ek, ← es]
      refine ⟨rfl, ?_, ?_⟩
      · intro t ht
        rw [hb, List.mem_cons] at ht
        cases ht with
        | inl ht =>
          have e2 : t.cur = x.cur := by rw [ht]
          omega
        | inr ht => cases ht
      · intro j t hj
        exact absurd hj (by omega)
    · obtain ⟨H1, H2, H3⟩ := ih k' u hE
      rw [hE] at h0
      have h1 : (if u.cur < x.cur then some (k' + 1, u) else some (0, x)) = some (k, s) := h0
      by_cases hc : u.cur < x.cur
      · rw [if_pos hc] at h1
        have e := Option.some.inj h1
        have ek : k' + 1 = k := congrArg Prod.fst e
        have es : u = s := congrArg Prod.snd e
        rw [← ek, ← es]
        refine ⟨H1, ?_, ?_⟩
        · intro t ht
          rw [List.mem_cons] at ht
          cases ht with
          | inl ht =>
            have e2 : t.cur = x.cur := by rw [ht]
            omega
          | inr ht => exact H2 t ht
        · intro j t hj hjt
          cases j with
          | zero =>
            have hjt' : some x = some t := hjt
            have e3 : x = t := Option.some.inj hjt'
            have e4 : t.cur = x.cur := by rw [e3]
            omega
          | succ j =>
            exact H3 j t (by omega) hjt
      · rw [if_neg hc] at h1
        have e := Option.some.inj h1
        have ek : 0 = k := congrArg Prod.fst e
        have es : x = s := congrArg Prod.snd e
        rw [← ek, ← es]
        refine ⟨rfl, ?_, ?_⟩
        · intro t ht
          rw [List.mem_cons] at ht
          cases ht with
          | inl ht =>
            have e2 : t.cur = x.cur := by rw [ht]
            omega
          | inr ht =>
            have := H2 t ht
            omega
        · intro j t hj
          exact absurd hj (by omega)

/-- With ids increasing in buffer order, "shortest, ties earliest" is the
minimum by (current length, occurrence id). -/
theorem shortest_lexmin (b : Buffer) :
    ∀ k s, incrIds b → shortest b = some (k, s) → lexmin b s := by
  induction b with
  | nil =>
    intro k s _ h
    have h' : (none : Option (Nat × Span)) = some (k, s) := h
    cases h'
  | cons x b ih =>
    intro k s hi h
    have hi' : (∀ u, u ∈ b → x.sid < u.sid) ∧ incrIds b := hi
    obtain ⟨hx, hib⟩ := hi'
    have h0 : pickShort x (shortest b) = some (k, s) := h
    rcases opt_cases (shortest b) with hE | ⟨k', u, hE⟩
    · have hb : b = [] := shortest_none b hE
      rw [hE] at h0
      have h1 : some (0, x) = some (k, s) := h0
      have es : x = s := congrArg Prod.snd (Option.some.inj h1)
      rw [← es]
      intro t ht
      rw [hb, List.mem_cons] at ht
      cases ht with
      | inl ht =>
        have e1 : t.cur = x.cur := by rw [ht]
        have e2 : t.sid = x.sid := by rw [ht]
        show x.cur < t.cur ∨ (x.cur = t.cur ∧ x.sid ≤ t.sid)
        exact Or.inr ⟨by omega, by omega⟩
      | inr ht => cases ht
    · have hu : lexmin b u := ih k' u hib hE
      obtain ⟨_, Hle, _⟩ := shortest_some b k' u hE
      rw [hE] at h0
      have h1 : (if u.cur < x.cur then some (k' + 1, u) else some (0, x)) = some (k, s) := h0
      by_cases hc : u.cur < x.cur
      · rw [if_pos hc] at h1
        have es : u = s := congrArg Prod.snd (Option.some.inj h1)
        rw [← es]
        intro t ht
        rw [List.mem_cons] at ht
        cases ht with
        | inl ht =>
          have e1 : t.cur = x.cur := by rw [ht]
          show u.cur < t.cur ∨ (u.cur = t.cur ∧ u.sid ≤ t.sid)
          exact Or.inl (by omega)
        | inr ht => exact hu t ht
      · rw [if_neg hc] at h1
        have es : x = s := congrArg Prod.snd (Option.some.inj h1)
        rw [← es]
        intro t ht
        rw [List.mem_cons] at ht
        show x.cur < t.cur ∨ (x.cur = t.cur ∧ x.sid ≤ t.sid)
        cases ht with
        | inl ht =>
          have e1 : t.cur = x.cur := by rw [ht]
          have e2 : t.sid = x.sid := by rw [ht]
          exact Or.inr ⟨by omega, by omega⟩
        | inr ht =>
          have h2 := Hle t ht
          have h3 := hx t ht
          by_cases heq : x.cur = t.cur
          · exact Or.inr ⟨heq, by omega⟩
          · exact Or.inl (by omega)

theorem remove_at_split (l1 : Buffer) (s : Span) (l2 : Buffer) :
    removeAt l1.length (l1 ++ s :: l2) = l1 ++ l2 := by
  induction l1 with
  | nil => rfl
  | cons x l1 ih =>
    show x :: removeAt l1.length (l1 ++ s :: l2) = x :: (l1 ++ l2)
    rw [ih]

theorem replace_at_split (l1 : Buffer) (s y : Span) (l2 : Buffer) :
    replaceAt l1.length y (l1 ++ s :: l2) = l1 ++ y :: l2 := by
  induction l1 with
  | nil => rfl
  | cons x l1 ih =>
    show x :: replaceAt l1.length y (l1 ++ s :: l2) = x :: (l1 ++ y :: l2)
    rw [ih]

/-! ## The loader -/

def arrLen (arr : List Nat) (i : Nat) : Nat := nthD arr i

def arrive (arr : List Nat) (st : XState) : XState :=
  ⟨st.narr + 1, st.buf ++ [Span.mk st.narr (arrLen arr st.narr) (arrLen arr st.narr)],
   st.started, st.row, st.rem, st.batch⟩

/-- Append up to `k` arrivals (fewer if the stream runs out). -/
def arriveN (arr : List Nat) : Nat → XState → XState
  | 0, st => st
  | k + 1, st => if st.narr < arr.length then arriveN arr k (arrive arr st) else st

/-- Batch sizes cycled; an empty list or a size `0` counts as `1`. -/
def batchSize : List Nat → Nat → Nat
  | [], _ => 1
  | b :: bs, j => max 1 (nthD (b :: bs) (j % (bs.length + 1)))

def nextBatch (st : XState) : XState :=
  ⟨st.narr, st.buf, st.started, st.row, st.rem, st.batch + 1⟩

def refillLoop (B : Nat) (batches arr : List Nat) : Nat → XState → XState
  | 0, st => st
  | f + 1, st =>
    if st.buf.length < B ∧ st.narr < arr.length then
      refillLoop B batches arr f (arriveN arr (batchSize batches st.batch) (nextBatch st))
    else st

def refill (B : Nat) (batches arr : List Nat) (st : XState) : XState :=
  refillLoop B batches arr (arr.length + 1) st

def selectFit (R : Nat) (st : XState) (k : Nat) (s : Span) : XState × Event :=
  (⟨st.narr, removeAt k st.buf, s.sid :: st.started,
    (if st.rem - s.cur = 0 then st.row + 1 else st.row),
    (if st.rem - s.cur = 0 then R else st.rem - s.cur), st.batch⟩,
   ⟨st.row, R - st.rem, s.sid, s.orig - s.cur, s.cur, false⟩)

def cropBuf : Policy → Buffer → Nat → Span → Nat → Buffer
  | .Discard, b, k, _, _ => removeAt k b
  | .Continue, b, k, s, rem => replaceAt k (Span.mk s.sid s.orig (s.cur - rem)) b

def selectCrop (pol : Policy) (R : Nat) (st : XState) (k : Nat) (s : Span) : XState × Event :=
  (⟨st.narr, cropBuf pol st.buf k s st.rem, s.sid :: st.started, st.row + 1, R, st.batch⟩,
   ⟨st.row, R - st.rem, s.sid, s.orig - s.cur, st.rem, true⟩)

def selectWith (pol : Policy) (R : Nat) (st : XState) :
    Option (Nat × Span) → Option (Nat × Span) → Option (XState × Event)
  | some (k, s), _ => some (selectFit R st k s)
  | none, some (k, s) => some (selectCrop pol R st k s)
  | none, none => none

def select (pol : Policy) (R : Nat) (st : XState) : Option (XState × Event) :=
  selectWith pol R st (bestFit st.rem st.buf) (shortest st.buf)

def runFrom (pol : Policy) (R B : Nat) (batches arr : List Nat) :
    Nat → XState → List Event → Result
  | 0, st, acc => ⟨st, acc.reverse, .outOfFuel⟩
  | f + 1, st, acc =>
    if (refill B batches arr st).buf.length < B then
      ⟨refill B batches arr st, acc.reverse, .exhausted⟩
    else
      (select pol R (refill B batches arr st)).elim
        ⟨refill B batches arr st, acc.reverse, .noSpan⟩
        (fun p => runFrom pol R B batches arr f p.1 (p.2 :: acc))

def xinit (R : Nat) : XState := ⟨0, [], [], 0, R, 0⟩

def run (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel : Nat) : Result :=
  runFrom pol R B batches arr fuel (xinit R) []

theorem arrive_n_succ (arr : List Nat) (k : Nat) (st : XState) :
    arriveN arr (k + 1) st =
      (if st.narr < arr.length then arriveN arr k (arrive arr st) else st) := rfl

theorem refill_loop_succ (B : Nat) (batches arr : List Nat) (f : Nat) (st : XState) :
    refillLoop B batches arr (f + 1) st =
      (if st.buf.length < B ∧ st.narr < arr.length then
        refillLoop B batches arr f (arriveN arr (batchSize batches st.batch) (nextBatch st))
      else st) := rfl

theorem run_from_succ (pol : Policy) (R B : Nat) (batches arr : List Nat) (f : Nat)
    (st : XState) (acc : List Event) :
    runFrom pol R B batches arr (f + 1) st acc =
      ((if (refill B batches arr st).buf.length < B then
        (⟨refill B batches arr st, acc.reverse, .exhausted⟩ : Result)
      else
        (select pol R (refill B batches arr st)).elim
          (⟨refill B batches arr st, acc.reverse, .noSpan⟩ : Result)
          (fun p => runFrom pol R B batches arr f p.1 (p.2 :: acc))) : Result) := rfl

/-! ## Refill postcondition -/

theorem batch_size_pos (batches : List Nat) (j : Nat) : 1 ≤ batchSize batches j := by
  cases batches with
  | nil => exact Nat.le_refl 1
  | cons b bs => exact Nat.le_max_left 1 _

theorem arrive_n_narr (arr : List Nat) (k : Nat) :
    ∀ st, st.narr ≤ arr.length →
      (st.narr ≤ (arriveN arr k st).narr ∧ (arriveN arr k st).narr ≤ arr.length) ∧
      (1 ≤ k → st.narr < arr.length → st.narr < (arriveN arr k st).narr) := by
  induction k with
  | zero =>
    intro st H
    exact ⟨⟨Nat.le_refl _, H⟩, fun hk _ => absurd hk (by omega)⟩
  | succ k ih =>
    intro st H
    rw [arrive_n_succ]
    by_cases hc : st.narr < arr.length
    · rw [if_pos hc]
      have ha : (arrive arr st).narr = st.narr + 1 := rfl
      obtain ⟨⟨h1, h2⟩, _⟩ := ih (arrive arr st) (by omega)
      exact ⟨⟨by omega, h2⟩, fun _ _ => by omega⟩
    · rw [if_neg hc]
      exact ⟨⟨Nat.le_refl _, H⟩, fun _ h => absurd h hc⟩

theorem refill_loop_post (B : Nat) (batches arr : List Nat) (f : Nat) :
    ∀ st, st.narr ≤ arr.length → arr.length < f + st.narr →
      B ≤ (refillLoop B batches arr f st).buf.length ∨
      (refillLoop B batches arr f st).narr = arr.length := by
  induction f with
  | zero =>
    intro st h1 h2
    exfalso
    omega
  | succ f ih =>
    intro st h1 h2
    rw [refill_loop_succ]
    by_cases hc : st.buf.length < B ∧ st.narr < arr.length
    · rw [if_pos hc]
      obtain ⟨_, hc2⟩ := hc
      have hn : (nextBatch st).narr = st.narr := rfl
      obtain ⟨⟨_, hb⟩, hcc⟩ :=
        arrive_n_narr arr (batchSize batches st.batch) (nextBatch st) (by omega)
      have hlt := hcc (batch_size_pos batches st.batch) (by omega)
      apply ih
      · exact hb
      · omega
    · rw [if_neg hc]
      by_cases hb : st.buf.length < B
      · right
        have : ¬ st.narr < arr.length := fun h => hc ⟨hb, h⟩
        omega
      · left
        omega

/-- After `refill`, either at least `B` spans are buffered or the arrivals are
exhausted. -/
theorem refill_post (B : Nat) (batches arr : List Nat) (st : XState)
    (h : st.narr ≤ arr.length) :
    B ≤ (refill B batches arr st).buf.length ∨ (refill B batches arr st).narr = arr.length :=
  refill_loop_post B batches arr (arr.length + 1) st h (by omega)

/-! ## Refinement -/

def proj (st : XState) : State := ⟨st.narr, st.buf, st.started⟩

def remOk (R : Nat) (st : XState) : Prop := 0 < st.rem ∧ st.rem ≤ R

theorem exec_arrive_refines (R B : Nat) (arr : List Nat) (st : XState) :
    Step R B (arrLen arr) (proj st) (proj (arrive arr st)) :=
  Step.step_arrive st.narr st.buf st.started

theorem arrive_n_reachable (R B : Nat) (arr : List Nat) (k : Nat) :
    ∀ st, Reachable R B (arrLen arr) (proj st) →
      Reachable R B (arrLen arr) (proj (arriveN arr k st)) ∧ (arriveN arr k st).rem = st.rem := by
  induction k with
  | zero =>
    intro st h
    exact ⟨h, rfl⟩
  | succ k ih =>
    intro st h
    rw [arrive_n_succ]
    by_cases hc : st.narr < arr.length
    · rw [if_pos hc]
      obtain ⟨h1, h2⟩ :=
        ih (arrive arr st) (Reachable.reach_step h (exec_arrive_refines R B arr st))
      exact ⟨h1, h2.trans rfl⟩
    · rw [if_neg hc]
      exact ⟨h, rfl⟩

theorem refill_loop_reachable (R B : Nat) (batches arr : List Nat) (f : Nat) :
    ∀ st, Reachable R B (arrLen arr) (proj st) → remOk R st →
      Reachable R B (arrLen arr) (proj (refillLoop B batches arr f st)) ∧
      remOk R (refillLoop B batches arr f st) := by
  induction f with
  | zero =>
    intro st h hr
    exact ⟨h, hr⟩
  | succ f ih =>
    intro st h hr
    rw [refill_loop_succ]
    by_cases hc : st.buf.length < B ∧ st.narr < arr.length
    · rw [if_pos hc]
      have hn : Reachable R B (arrLen arr) (proj (nextBatch st)) := h
      obtain ⟨h1, h2⟩ := arrive_n_reachable R B arr (batchSize batches st.batch) (nextBatch st) hn
      apply ih
      · exact h1
      · unfold remOk
        rw [h2]
        exact hr
    · rw [if_neg hc]
      exact ⟨h, hr⟩

theorem refill_reachable (R B : Nat) (batches arr : List Nat) (st : XState)
    (h : Reachable R B (arrLen arr) (proj st)) (hr : remOk R st) :
    Reachable R B (arrLen arr) (proj (refill B batches arr st)) ∧
    remOk R (refill B batches arr st) :=
  refill_loop_reachable R B batches arr (arr.length + 1) st h hr

theorem step_take_at (R B : Nat) (len : Nat → Nat) (n : Nat) (b : Buffer) (h : List Nat)
    (k : Nat) (s : Span) (hn : nthErr b k = some s) (hB : B ≤ b.length)
    (hs : selectable R b s) :
    Step R B len ⟨n, b, h⟩ ⟨n, removeAt k b, s.sid :: h⟩ := by
  obtain ⟨l1, l2, e, hl⟩ := nth_error_split b k s hn
  subst e
  subst hl
  rw [remove_at_split]
  exact Step.step_take n l1 s l2 h hB hs

theorem step_keep_at (R B : Nat) (len : Nat → Nat) (n : Nat) (b : Buffer) (h : List Nat)
    (k : Nat) (s : Span) (c' : Nat) (hn : nthErr b k = some s) (hB : B ≤ b.length)
    (hs : selectable R b s) (hc1 : 0 < c') (hc2 : c' < s.cur) :
    Step R B len ⟨n, b, h⟩ ⟨n, replaceAt k (Span.mk s.sid s.orig c') b, s.sid :: h⟩ := by
  obtain ⟨l1, l2, e, hl⟩ := nth_error_split b k s hn
  subst e
  subst hl
  rw [replace_at_split]
  exact Step.step_keep n l1 s l2 h c' hB hs hc1 hc2

/-- Every exec selection (at a boundary with at least `B` buffered spans and
`0 < rem ≤ R`) is a step of the relation. -/
theorem exec_select_refines (pol : Policy) (R B : Nat) (arr : List Nat)
    (st st' : XState) (ev : Event)
    (h : Reachable R B (arrLen arr) (proj st)) (hr : remOk R st)
    (hB : B ≤ st.buf.length) (hsel : select pol R st = some (st', ev)) :
    Step R B (arrLen arr) (proj st) (proj st') ∧ remOk R st' ∧
      st'.started = ev.occ :: st.started := by
  obtain ⟨hr1, hr2⟩ := hr
  have h0 : selectWith pol R st (bestFit st.rem st.buf) (shortest st.buf) = some (st', ev) := hsel
  rcases opt_cases (bestFit st.rem st.buf) with hf | ⟨k, s, hf⟩
  · rw [hf] at h0
    rcases opt_cases (shortest st.buf) with hs | ⟨k, s, hs⟩
    · rw [hs] at h0
      have h1 : (none : Option (XState × Event)) = some (st', ev) := h0
      cases h1
    · rw [hs] at h0
      have h1 : some (selectCrop pol R st k s) = some (st', ev) := h0
      have e := (Option.some.inj h1).symm
      have e1 : st' = (selectCrop pol R st k s).1 := congrArg Prod.fst e
      have e2 : ev = (selectCrop pol R st k s).2 := congrArg Prod.snd e
      subst e1
      subst e2
      obtain ⟨hn, _, _⟩ := shortest_some st.buf k s hs
      have hin : s ∈ st.buf := nth_error_In st.buf k s hn
      have hbig : st.rem < s.cur := best_fit_none st.rem st.buf hf s hin
      have hi : incrIds st.buf := (reachable_wf R B (arrLen arr) (proj st) h).2.1
      have hsel' : selectable R st.buf s := Or.inr (shortest_lexmin st.buf k s hi hs)
      refine ⟨?_, ⟨(show 0 < R by omega), (show R ≤ R from Nat.le_refl R)⟩, rfl⟩
      cases pol with
      | Discard =>
        exact step_take_at R B (arrLen arr) st.narr st.buf st.started k s hn hB hsel'
      | Continue =>
        exact step_keep_at R B (arrLen arr) st.narr st.buf st.started k s (s.cur - st.rem)
          hn hB hsel' (by omega) (by omega)
  · rw [hf] at h0
    have h1 : some (selectFit R st k s) = some (st', ev) := h0
    have e := (Option.some.inj h1).symm
    have e1 : st' = (selectFit R st k s).1 := congrArg Prod.fst e
    have e2 : ev = (selectFit R st k s).2 := congrArg Prod.snd e
    subst e1
    subst e2
    obtain ⟨hn, hfit, _, _⟩ := best_fit_some st.rem st.buf k s hf
    have hstep : Step R B (arrLen arr) (proj st) ⟨st.narr, removeAt k st.buf, s.sid :: st.started⟩ :=
      step_take_at R B (arrLen arr) st.narr st.buf st.started k s hn hB
        (Or.inl ⟨st.rem, hr2, hfit⟩)
    refine ⟨hstep, ?_, rfl⟩
    show 0 < (if st.rem - s.cur = 0 then R else st.rem - s.cur) ∧
      (if st.rem - s.cur = 0 then R else st.rem - s.cur) ≤ R
    by_cases hz : st.rem - s.cur = 0
    · rw [if_pos hz]
      exact ⟨by omega, Nat.le_refl R⟩
    · rw [if_neg hz]
      exact ⟨by omega, by omega⟩

theorem run_from_reachable (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel : Nat) :
    ∀ st acc, Reachable R B (arrLen arr) (proj st) → remOk R st →
      Reachable R B (arrLen arr) (proj (runFrom pol R B batches arr fuel st acc).state) := by
  induction fuel with
  | zero =>
    intro st acc h _
    exact h
  | succ f ih =>
    intro st acc h hr
    obtain ⟨h1, hr1⟩ := refill_reachable R B batches arr st h hr
    rw [run_from_succ]
    by_cases hc : (refill B batches arr st).buf.length < B
    · rw [if_pos hc]
      exact h1
    · rw [if_neg hc]
      rcases opt_cases (select pol R (refill B batches arr st)) with hs | ⟨st2, ev, hs⟩
      · rw [hs]
        exact h1
      · rw [hs]
        obtain ⟨hstep, hr2, _⟩ :=
          exec_select_refines pol R B arr (refill B batches arr st) st2 ev h1 hr1 (by omega) hs
        exact ih st2 (ev :: acc) (Reachable.reach_step h1 hstep) hr2

theorem arrive_n_started (arr : List Nat) (k : Nat) :
    ∀ st, (arriveN arr k st).started = st.started := by
  induction k with
  | zero =>
    intro st
    rfl
  | succ k ih =>
    intro st
    rw [arrive_n_succ]
    by_cases hc : st.narr < arr.length
    · rw [if_pos hc, ih]
      rfl
    · rw [if_neg hc]

theorem refill_started (B : Nat) (batches arr : List Nat) (st : XState) :
    (refill B batches arr st).started = st.started := by
  unfold refill
  generalize arr.length + 1 = f
  induction f generalizing st with
  | zero => rfl
  | succ f ih =>
    rw [refill_loop_succ]
    by_cases hc : st.buf.length < B ∧ st.narr < arr.length
    · rw [if_pos hc, ih, arrive_n_started]
      rfl
    · rw [if_neg hc]

theorem select_started (pol : Policy) (R : Nat) (st st' : XState) (ev : Event)
    (hsel : select pol R st = some (st', ev)) : st'.started = ev.occ :: st.started := by
  have h0 : selectWith pol R st (bestFit st.rem st.buf) (shortest st.buf) = some (st', ev) := hsel
  rcases opt_cases (bestFit st.rem st.buf) with hf | ⟨k, s, hf⟩
  · rw [hf] at h0
    rcases opt_cases (shortest st.buf) with hs | ⟨k, s, hs⟩
    · rw [hs] at h0
      have h1 : (none : Option (XState × Event)) = some (st', ev) := h0
      cases h1
    · rw [hs] at h0
      have h1 : some (selectCrop pol R st k s) = some (st', ev) := h0
      have e := (Option.some.inj h1).symm
      have e1 : st' = (selectCrop pol R st k s).1 := congrArg Prod.fst e
      have e2 : ev = (selectCrop pol R st k s).2 := congrArg Prod.snd e
      subst e1
      subst e2
      rfl
  · rw [hf] at h0
    have h1 : some (selectFit R st k s) = some (st', ev) := h0
    have e := (Option.some.inj h1).symm
    have e1 : st' = (selectFit R st k s).1 := congrArg Prod.fst e
    have e2 : ev = (selectFit R st k s).2 := congrArg Prod.snd e
    subst e1
    subst e2
    rfl

theorem run_from_started (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel : Nat) :
    ∀ st acc h0, st.started = List.map Event.occ acc ++ h0 →
      (runFrom pol R B batches arr fuel st acc).state.started =
        List.map Event.occ (runFrom pol R B batches arr fuel st acc).trace.reverse ++ h0 := by
  induction fuel with
  | zero =>
    intro st acc h0 H
    show st.started = List.map Event.occ acc.reverse.reverse ++ h0
    rw [List.reverse_reverse]
    exact H
  | succ f ih =>
    intro st acc h0 H
    rw [run_from_succ]
    by_cases hc : (refill B batches arr st).buf.length < B
    · rw [if_pos hc]
      show (refill B batches arr st).started = List.map Event.occ acc.reverse.reverse ++ h0
      rw [List.reverse_reverse, refill_started]
      exact H
    · rw [if_neg hc]
      rcases opt_cases (select pol R (refill B batches arr st)) with hs | ⟨st2, ev, hs⟩
      · rw [hs]
        show (refill B batches arr st).started = List.map Event.occ acc.reverse.reverse ++ h0
        rw [List.reverse_reverse, refill_started]
        exact H
      · rw [hs]
        show (runFrom pol R B batches arr f st2 (ev :: acc)).state.started =
          List.map Event.occ (runFrom pol R B batches arr f st2 (ev :: acc)).trace.reverse ++ h0
        apply ih
        show st2.started = (ev.occ :: List.map Event.occ acc) ++ h0
        rw [select_started pol R _ st2 ev hs, refill_started, H, List.cons_append]

/-- `run` only produces reachable states (for every amount of fuel, hence at
every selection boundary it passes). -/
theorem run_reachable (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel : Nat)
    (hR : 0 < R) : Reachable R B (arrLen arr) (proj (run pol R B batches arr fuel).state) :=
  run_from_reachable pol R B batches arr fuel (xinit R) [] Reachable.reach_init
    ⟨hR, Nat.le_refl R⟩

/-- The started history of `run` is exactly the list of selected occurrences
of its trace. -/
theorem run_started_trace (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel : Nat) :
    (run pol R B batches arr fuel).state.started =
      List.map Event.occ (run pol R B batches arr fuel).trace.reverse := by
  have H := run_from_started pol R B batches arr fuel (xinit R) [] [] rfl
  rw [List.append_nil] at H
  exact H

theorem mem_map_reverse (l : List Event) (p : Nat) (h : p ∈ List.map Event.occ l) :
    p ∈ List.map Event.occ l.reverse := by
  induction l with
  | nil =>
    have h' : p ∈ ([] : List Nat) := h
    cases h'
  | cons e l ih =>
    rw [List.reverse_cons, List.map_append, List.mem_append]
    have h0 : p ∈ e.occ :: List.map Event.occ l := h
    rw [List.mem_cons] at h0
    cases h0 with
    | inl h1 =>
      right
      rw [h1]
      exact List.Mem.head _
    | inr h1 => exact Or.inl (ih h1)

/-- The main theorem applied to the real rule: in the final state of any run,
every protected occurrence is buffered unchanged and absent from the trace. -/
theorem run_protected (pol : Policy) (R B : Nat) (batches arr : List Nat) (fuel p : Nat)
    (hR : 0 < R)
    (hp : isProtected R B (arrLen arr) (run pol R B batches arr fuel).state.narr p) :
    Span.mk p (arrLen arr p) (arrLen arr p) ∈ (run pol R B batches arr fuel).state.buf ∧
      p ∉ List.map Event.occ (run pol R B batches arr fuel).trace := by
  obtain ⟨hin, hns⟩ :=
    protected_invariant R B (arrLen arr) _ (run_reachable pol R B batches arr fuel hR) p hp
  refine ⟨hin, ?_⟩
  intro ht
  apply hns
  show p ∈ (run pol R B batches arr fuel).state.started
  rw [run_started_trace]
  exact mem_map_reverse _ p ht

end PackingTheory
