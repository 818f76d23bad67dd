import PackingTheory.Defs
import PackingTheory.Semantics
import PackingTheory.KeyLemma
import PackingTheory.Invariant
import PackingTheory.Exec
import PackingTheory.BoundedWait

/-!
# BoundedWaitExec: the executable bounded-wait rule, and its refinement

Mirror of `proofs/coq/BoundedWaitExec.v`. `bwPick` implements the engines' rule
(at a row start, the oldest unstarted span if it arrived more than `A` rows ago;
otherwise the largest fitting span, else the shortest); `bwEmit` emits
`min cur rem` tokens (a crop keeps its suffix in place); `bwRun` refills before
every selection (recording the current row as the arrival row of each new
occurrence) and stops at the first boundary where fewer than `B` spans are
buffered after refilling. Every refill batch and every selection is a `WStep`
with `bmax` = the largest batch size, so the theorems of `BoundedWait.lean` hold
for the real rule and are restated on the emitted trace.

Differences in form from the Coq file: `firstUnstartedAt` delegates its index
shift to `shiftIdx`, `bwEmit` returns its state and event through `bwEmitState`
/ `bwEmitEvent`, and `startRecords` uses core `List.filter`.
-/

namespace PackingTheory

structure BX where
  narr : Nat
  buf : Buffer
  row : Nat
  rem : Nat
  arows : List Nat
  starts : List (Nat × Nat)
  emitted : Nat
  batch : Nat

structure BRes where
  state : BX
  trace : List Event
  stop : StopReason

def shiftIdx : Option (Nat × Span) → Option (Nat × Span)
  | some (k, u) => some (k + 1, u)
  | none => none

/-- The oldest unstarted span with its index. -/
def firstUnstartedAt : Buffer → Option (Nat × Span)
  | [] => none
  | s :: t => if s.cur = s.orig then some (0, s) else shiftIdx (firstUnstartedAt t)

/-- Tokens emitted in row `r`. -/
def rowSum (r : Nat) : List Event → Nat
  | [] => 0
  | ev :: t => (if ev.row = r then ev.emitted else 0) + rowSum r t

def emittedSum : List Event → Nat
  | [] => 0
  | ev :: t => ev.emitted + emittedSum t

/-- The first-start records of a list of events (newest first). -/
def startRecords (l : List Event) : List (Nat × Nat) :=
  (l.filter (fun ev => decide (ev.start = 0))).map (fun ev => (ev.occ, ev.row))

/-- The largest refill batch (at least `1`, as `batchSize`). -/
def bmaxOf (batches : List Nat) : Nat := batches.foldr max 1

def bwDelayBound (B A : Nat) (batches : List Nat) : Nat := bwBound B A (bmaxOf batches)

def bwArrive (arr : List Nat) (st : BX) : BX :=
  ⟨st.narr + 1, st.buf ++ [Span.mk st.narr (arrLen arr st.narr) (arrLen arr st.narr)],
   st.row, st.rem, st.arows ++ [st.row], st.starts, st.emitted, st.batch⟩

def bwArriveN (arr : List Nat) : Nat → BX → BX
  | 0, st => st
  | k + 1, st => if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st

def bwNextBatch (st : BX) : BX :=
  ⟨st.narr, st.buf, st.row, st.rem, st.arows, st.starts, st.emitted, st.batch + 1⟩

def bwRefillLoop (B : Nat) (batches arr : List Nat) : Nat → BX → BX
  | 0, st => st
  | f + 1, st =>
    if st.buf.length < B ∧ st.narr < arr.length then
      bwRefillLoop B batches arr f (bwArriveN arr (batchSize batches st.batch) (bwNextBatch st))
    else st

def bwRefill (B : Nat) (batches arr : List Nat) (st : BX) : BX :=
  bwRefillLoop B batches arr (arr.length + 1) st

def forcedOf (A : Nat) (st : BX) : Option (Nat × Span) → Option (Nat × Span)
  | some (k, u) => if A < st.row - nthD st.arows u.sid then some (k, u) else none
  | none => none

/-- The forced start, if this is a row start and the oldest unstarted span is overdue. -/
def forcedPick (R A : Nat) (st : BX) : Option (Nat × Span) :=
  if st.rem = R then forcedOf A st (firstUnstartedAt st.buf) else none

def pickOr : Option (Nat × Span) → Option (Nat × Span) → Option (Nat × Span)
  | some p, _ => some p
  | none, q => q

def bwPick (R A : Nat) (st : BX) : Option (Nat × Span) :=
  pickOr (forcedPick R A st) (pickOr (bestFit st.rem st.buf) (shortest st.buf))

def bwEmitState (R : Nat) (st : BX) (k : Nat) (s : Span) : BX :=
  ⟨st.narr,
   (if min s.cur st.rem = s.cur then removeAt k st.buf
    else replaceAt k (Span.mk s.sid s.orig (s.cur - min s.cur st.rem)) st.buf),
   (if st.rem - min s.cur st.rem = 0 then st.row + 1 else st.row),
   (if st.rem - min s.cur st.rem = 0 then R else st.rem - min s.cur st.rem),
   st.arows,
   (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts),
   st.emitted + min s.cur st.rem,
   st.batch⟩

def bwEmitEvent (R : Nat) (st : BX) (s : Span) : Event :=
  ⟨st.row, R - st.rem, s.sid, s.orig - s.cur, min s.cur st.rem, !(decide (min s.cur st.rem = s.cur))⟩

def bwRunFrom (R B A : Nat) (batches arr : List Nat) : Nat → BX → List Event → BRes
  | 0, st, acc => ⟨st, acc.reverse, .outOfFuel⟩
  | f + 1, st, acc =>
    if (bwRefill B batches arr st).buf.length < B then
      ⟨bwRefill B batches arr st, acc.reverse, .exhausted⟩
    else
      (bwPick R A (bwRefill B batches arr st)).elim
        ⟨bwRefill B batches arr st, acc.reverse, .noSpan⟩
        (fun p => bwRunFrom R B A batches arr f (bwEmitState R (bwRefill B batches arr st) p.1 p.2)
          (bwEmitEvent R (bwRefill B batches arr st) p.2 :: acc))

def bxinit (R : Nat) : BX := ⟨0, [], 0, R, [], [], 0, 0⟩

def bwRun (R B A : Nat) (batches arr : List Nat) (fuel : Nat) : BRes :=
  bwRunFrom R B A batches arr fuel (bxinit R) []

theorem bw_run_from_succ (R B A : Nat) (batches arr : List Nat) (f : Nat) (st : BX)
    (acc : List Event) :
    bwRunFrom R B A batches arr (f + 1) st acc =
      (if (bwRefill B batches arr st).buf.length < B then
        (⟨bwRefill B batches arr st, acc.reverse, .exhausted⟩ : BRes)
      else
        (bwPick R A (bwRefill B batches arr st)).elim
          (⟨bwRefill B batches arr st, acc.reverse, .noSpan⟩ : BRes)
          (fun p => bwRunFrom R B A batches arr f (bwEmitState R (bwRefill B batches arr st) p.1 p.2)
            (bwEmitEvent R (bwRefill B batches arr st) p.2 :: acc))) := rfl

theorem bw_refill_loop_succ (B : Nat) (batches arr : List Nat) (f : Nat) (st : BX) :
    bwRefillLoop B batches arr (f + 1) st =
      (if st.buf.length < B ∧ st.narr < arr.length then
        bwRefillLoop B batches arr f (bwArriveN arr (batchSize batches st.batch) (bwNextBatch st))
      else st) := rfl

def bproj (st : BX) : WState := ⟨st.narr, st.buf, st.row, st.rem, st.arows, st.starts, st.emitted⟩

/-! ## Toolkit -/

theorem first_unstarted_at_some (b : Buffer) (k : Nat) (u : Span)
    (h : firstUnstartedAt b = some (k, u)) : nthErr b k = some u ∧ firstUnstarted b = some u := by
  induction b generalizing k with
  | nil => cases h
  | cons s t ih =>
    have h' : (if s.cur = s.orig then some (0, s) else shiftIdx (firstUnstartedAt t)) = some (k, u) :=
      h
    show nthErr (s :: t) k = some u ∧
      (if s.cur = s.orig then some s else firstUnstarted t) = some u
    by_cases hs : s.cur = s.orig
    · rw [if_pos hs] at h'
      rw [if_pos hs]
      have e := Option.some.inj h'
      have e1 : 0 = k := congrArg Prod.fst e
      have e2 : s = u := congrArg Prod.snd e
      rw [← e1, ← e2]
      exact ⟨rfl, rfl⟩
    · rw [if_neg hs] at h'
      rw [if_neg hs]
      rcases opt_cases (firstUnstartedAt t) with hn | ⟨k', u', hn⟩
      · rw [hn] at h'
        cases h'
      · rw [hn] at h'
        have e := Option.some.inj h'
        have e1 : k' + 1 = k := congrArg Prod.fst e
        have e2 : u' = u := congrArg Prod.snd e
        rw [e2] at hn
        obtain ⟨h1, h2⟩ := ih k' hn
        rw [← e1]
        exact ⟨h1, h2⟩

theorem first_unstarted_at_of (b : Buffer) (u : Span) (h : firstUnstarted b = some u) :
    ∃ k, firstUnstartedAt b = some (k, u) := by
  induction b with
  | nil => cases h
  | cons s t ih =>
    have h' : (if s.cur = s.orig then some s else firstUnstarted t) = some u := h
    show ∃ k, (if s.cur = s.orig then some (0, s) else shiftIdx (firstUnstartedAt t)) = some (k, u)
    by_cases hs : s.cur = s.orig
    · rw [if_pos hs] at h'
      rw [if_pos hs]
      rw [Option.some.inj h']
      exact ⟨0, rfl⟩
    · rw [if_neg hs] at h'
      rw [if_neg hs]
      obtain ⟨k, hk⟩ := ih h'
      rw [hk]
      exact ⟨k + 1, rfl⟩

theorem foldr_max_ge (l : List Nat) (d : Nat) : d ≤ l.foldr max d := by
  induction l with
  | nil => exact Nat.le_refl d
  | cons x t ih =>
    show d ≤ max x (t.foldr max d)
    exact Nat.le_trans ih (Nat.le_max_right _ _)

theorem nthD_le_foldr_max (l : List Nat) (j d : Nat) : nthD l j ≤ l.foldr max d := by
  induction l generalizing j with
  | nil => exact Nat.zero_le _
  | cons x t ih =>
    cases j with
    | zero => exact Nat.le_max_left x (t.foldr max d)
    | succ j =>
      show nthD t j ≤ max x (t.foldr max d)
      exact Nat.le_trans (ih j) (Nat.le_max_right _ _)

theorem bmax_pos (batches : List Nat) : 1 ≤ bmaxOf batches := foldr_max_ge batches 1

theorem batch_size_bmax (batches : List Nat) (j : Nat) : batchSize batches j ≤ bmaxOf batches := by
  cases batches with
  | nil => exact Nat.le_refl 1
  | cons b bs =>
    show max 1 (nthD (b :: bs) (j % (bs.length + 1))) ≤ (b :: bs).foldr max 1
    exact Nat.max_le.mpr ⟨foldr_max_ge _ 1, nthD_le_foldr_max _ _ 1⟩

theorem nthD_mem (l : List Nat) (j : Nat) (h : j < l.length) : nthD l j ∈ l := by
  induction l generalizing j with
  | nil => exact absurd h (Nat.not_lt_zero _)
  | cons x t ih =>
    cases j with
    | zero => exact List.Mem.head _
    | succ j =>
      rw [List.length_cons] at h
      exact List.Mem.tail _ (ih j (by omega))

theorem repeatN_succ (x k : Nat) : repeatN x (k + 1) = [x] ++ repeatN x k := rfl

theorem fresh_succ (len : Nat → Nat) (n k : Nat) :
    fresh len n (k + 1) = [⟨n, len n, len n⟩] ++ fresh len (n + 1) k := rfl

theorem bw_arrive_n_eq (arr : List Nat) (k : Nat) :
    ∀ st : BX, st.narr ≤ arr.length →
      bwArriveN arr k st =
        ⟨st.narr + min k (arr.length - st.narr),
         st.buf ++ fresh (arrLen arr) st.narr (min k (arr.length - st.narr)),
         st.row, st.rem, st.arows ++ repeatN st.row (min k (arr.length - st.narr)),
         st.starts, st.emitted, st.batch⟩ := by
  induction k with
  | zero =>
    intro st _
    have e : min 0 (arr.length - st.narr) = 0 := by omega
    rw [e]
    cases st with
    | mk n b r q a s em bt =>
      show (⟨n, b, r, q, a, s, em, bt⟩ : BX) = ⟨n + 0, b ++ [], r, q, a ++ [], s, em, bt⟩
      rw [Nat.add_zero, List.append_nil, List.append_nil]
  | succ k ih =>
    intro st h
    show (if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st) = _
    by_cases hc : st.narr < arr.length
    · rw [if_pos hc, ih (bwArrive arr st) (by show st.narr + 1 ≤ arr.length; omega)]
      have e : min (k + 1) (arr.length - st.narr) = min k (arr.length - (st.narr + 1)) + 1 := by
        omega
      rw [e, fresh_succ, repeatN_succ]
      show (⟨st.narr + 1 + min k (arr.length - (st.narr + 1)),
             (st.buf ++ [Span.mk st.narr (arrLen arr st.narr) (arrLen arr st.narr)]) ++
               fresh (arrLen arr) (st.narr + 1) (min k (arr.length - (st.narr + 1))),
             st.row, st.rem,
             (st.arows ++ [st.row]) ++ repeatN st.row (min k (arr.length - (st.narr + 1))),
             st.starts, st.emitted, st.batch⟩ : BX) = _
      rw [List.append_assoc, List.append_assoc, Nat.add_assoc, Nat.add_comm 1 _]
    · rw [if_neg hc]
      have e : min (k + 1) (arr.length - st.narr) = 0 := by omega
      rw [e]
      cases st with
      | mk n b r q a s em bt =>
        show (⟨n, b, r, q, a, s, em, bt⟩ : BX) = ⟨n + 0, b ++ [], r, q, a ++ [], s, em, bt⟩
        rw [Nat.add_zero, List.append_nil, List.append_nil]

/-! ## Refinement -/

section
variable (R B A : Nat) (batches arr : List Nat)

theorem refill_batch_refines (hpos : ∀ x, x ∈ arr → 0 < x) (st : BX)
    (h1 : st.narr ≤ arr.length) (h2 : st.buf.length < B) (h3 : st.narr < arr.length) :
    WStep R B A (bmaxOf batches) (arrLen arr) (bproj st)
      (bproj (bwArriveN arr (batchSize batches st.batch) (bwNextBatch st))) ∧
    (bwArriveN arr (batchSize batches st.batch) (bwNextBatch st)).narr ≤ arr.length := by
  rw [bw_arrive_n_eq arr _ (bwNextBatch st) h1]
  have hp := batch_size_pos batches st.batch
  have hm := batch_size_bmax batches st.batch
  refine ⟨?_, by show st.narr + min (batchSize batches st.batch) (arr.length - st.narr) ≤ arr.length; omega⟩
  exact WStep.arrive (bproj st) (min (batchSize batches st.batch) (arr.length - st.narr)) h2
    (by omega) (by omega)
    (fun j _ hj2 => hpos _ (nthD_mem arr j (by
      have hj : j < st.narr + min (batchSize batches st.batch) (arr.length - st.narr) := hj2
      omega)))

theorem refill_loop_reachable (hpos : ∀ x, x ∈ arr → 0 < x) (f : Nat) :
    ∀ st : BX, WReachable R B A (bmaxOf batches) (arrLen arr) (bproj st) → st.narr ≤ arr.length →
      WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRefillLoop B batches arr f st)) ∧
      (bwRefillLoop B batches arr f st).narr ≤ arr.length := by
  induction f with
  | zero => intro st h1 h2; exact ⟨h1, h2⟩
  | succ f ih =>
    intro st h1 h2
    rw [bw_refill_loop_succ]
    by_cases hc : st.buf.length < B ∧ st.narr < arr.length
    · rw [if_pos hc]
      obtain ⟨hs, hn⟩ := refill_batch_refines R B A batches arr hpos st h2 hc.1 hc.2
      exact ih _ (WReachable.step h1 hs) hn
    · rw [if_neg hc]
      exact ⟨h1, h2⟩

/-- The pick respects the forced rule, and it is a buffered span. -/
theorem bw_pick_spec (st : BX) (k : Nat) (s : Span) (h : bwPick R A st = some (k, s)) :
    nthErr st.buf k = some s ∧ (∀ u, forced R A (bproj st) u → s = u) := by
  unfold bwPick at h
  rcases opt_cases (forcedPick R A st) with hf | ⟨k0, u0, hf⟩
  · rw [hf] at h
    have hno : ∀ u, ¬ forced R A (bproj st) u := by
      intro u hu
      obtain ⟨hR, hu1, ho⟩ := hu
      obtain ⟨k1, hk1⟩ := first_unstarted_at_of st.buf u hu1
      unfold forcedPick at hf
      have hR' : st.rem = R := hR
      rw [if_pos hR', hk1] at hf
      have hf' : (if A < st.row - nthD st.arows u.sid then some (k1, u) else none) = none := hf
      have ho' : A < st.row - nthD st.arows u.sid := ho
      rw [if_pos ho'] at hf'
      cases hf'
    refine ⟨?_, fun u hu => absurd hu (hno u)⟩
    have h' : pickOr (bestFit st.rem st.buf) (shortest st.buf) = some (k, s) := h
    rcases opt_cases (bestFit st.rem st.buf) with hb | ⟨k1, s1, hb⟩
    · rw [hb] at h'
      exact (shortest_some st.buf k s h').1
    · rw [hb] at h'
      have e := Option.some.inj h'
      have e1 : k1 = k := congrArg Prod.fst e
      have e2 : s1 = s := congrArg Prod.snd e
      rw [e1, e2] at hb
      exact (best_fit_some st.rem st.buf k s hb).1
  · rw [hf] at h
    have e := Option.some.inj h
    have e1 : k0 = k := congrArg Prod.fst e
    have e2 : u0 = s := congrArg Prod.snd e
    rw [e1, e2] at hf
    unfold forcedPick at hf
    by_cases hR : st.rem = R
    · rw [if_pos hR] at hf
      rcases opt_cases (firstUnstartedAt st.buf) with hn | ⟨k1, u1, hn⟩
      · rw [hn] at hf
        cases hf
      · rw [hn] at hf
        have hf' : (if A < st.row - nthD st.arows u1.sid then some (k1, u1) else none) = some (k, s) :=
          hf
        by_cases ho : A < st.row - nthD st.arows u1.sid
        · rw [if_pos ho] at hf'
          have e' := Option.some.inj hf'
          have e3 : k1 = k := congrArg Prod.fst e'
          have e4 : u1 = s := congrArg Prod.snd e'
          rw [e3, e4] at hn
          obtain ⟨hn1, hn2⟩ := first_unstarted_at_some st.buf k s hn
          refine ⟨hn1, ?_⟩
          intro u hu
          obtain ⟨_, hu1, _⟩ := hu
          have hu1' : firstUnstarted st.buf = some u := hu1
          rw [hn2] at hu1'
          exact Option.some.inj hu1'
        · rw [if_neg ho] at hf'
          cases hf'
    · rw [if_neg hR] at hf
      cases hf

theorem bw_emit_proj (st : BX) (k : Nat) (s : Span) (b1 b2 : Buffer)
    (hb : st.buf = b1 ++ s :: b2) (hk : b1.length = k) :
    bproj (bwEmitState R st k s) = afterSelect R (bproj st) b1 s b2 (min s.cur st.rem) := by
  show (⟨st.narr,
     (if min s.cur st.rem = s.cur then removeAt k st.buf
      else replaceAt k (Span.mk s.sid s.orig (s.cur - min s.cur st.rem)) st.buf),
     (if st.rem - min s.cur st.rem = 0 then st.row + 1 else st.row),
     (if st.rem - min s.cur st.rem = 0 then R else st.rem - min s.cur st.rem),
     st.arows,
     (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts),
     st.emitted + min s.cur st.rem⟩ : WState) =
    ⟨st.narr,
     (if min s.cur st.rem = s.cur then b1 ++ b2
      else b1 ++ Span.mk s.sid s.orig (s.cur - min s.cur st.rem) :: b2),
     (if st.rem - min s.cur st.rem = 0 then st.row + 1 else st.row),
     (if st.rem - min s.cur st.rem = 0 then R else st.rem - min s.cur st.rem),
     st.arows,
     (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts),
     st.emitted + min s.cur st.rem⟩
  rw [hb, ← hk, remove_at_split, replace_at_split]

/-- Every executable selection is a step of the relation. -/
theorem bw_exec_select_refines (hR : 0 < R) (hB : 1 ≤ B) (st : BX) (k : Nat) (s : Span)
    (h : WReachable R B A (bmaxOf batches) (arrLen arr) (bproj st))
    (hp : bwPick R A st = some (k, s)) :
    WStep R B A (bmaxOf batches) (arrLen arr) (bproj st) (bproj (bwEmitState R st k s)) := by
  have hok := bw_invariant R B A (bmaxOf batches) (arrLen arr) hR hB _ h
  obtain ⟨hn, hf⟩ := bw_pick_spec R A st k s hp
  obtain ⟨b1, b2, hb, hk⟩ := nth_error_split st.buf k s hn
  rw [bw_emit_proj R st k s b1 b2 hb hk]
  have hs : s ∈ st.buf := nth_error_In st.buf k s hn
  obtain ⟨_, _, hc, _⟩ := hok.spans s hs
  have hr1 : 0 < st.rem := hok.rem_pos
  exact WStep.select (bproj st) b1 s b2 (min s.cur st.rem) hb
    (by omega) (Nat.min_le_left _ _) (Nat.min_le_right _ _) hf

/-! ## The driver -/

theorem arrive_n_fields (k : Nat) :
    ∀ st : BX, (bwArriveN arr k st).starts = st.starts ∧ (bwArriveN arr k st).emitted = st.emitted ∧
      (bwArriveN arr k st).row = st.row ∧ (bwArriveN arr k st).rem = st.rem := by
  induction k with
  | zero => intro st; exact ⟨rfl, rfl, rfl, rfl⟩
  | succ k ih =>
    intro st
    show (if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st).starts = st.starts ∧
      (if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st).emitted = st.emitted ∧
      (if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st).row = st.row ∧
      (if st.narr < arr.length then bwArriveN arr k (bwArrive arr st) else st).rem = st.rem
    by_cases hc : st.narr < arr.length
    · rw [if_pos hc]
      exact ih (bwArrive arr st)
    · rw [if_neg hc]
      exact ⟨rfl, rfl, rfl, rfl⟩

theorem refill_loop_fields (f : Nat) :
    ∀ st : BX, (bwRefillLoop B batches arr f st).starts = st.starts ∧
      (bwRefillLoop B batches arr f st).emitted = st.emitted ∧
      (bwRefillLoop B batches arr f st).row = st.row ∧ (bwRefillLoop B batches arr f st).rem = st.rem := by
  induction f with
  | zero => intro st; exact ⟨rfl, rfl, rfl, rfl⟩
  | succ f ih =>
    intro st
    by_cases hc : st.buf.length < B ∧ st.narr < arr.length
    · rw [bw_refill_loop_succ, if_pos hc]
      obtain ⟨h1, h2, h3, h4⟩ := ih (bwArriveN arr (batchSize batches st.batch) (bwNextBatch st))
      obtain ⟨g1, g2, g3, g4⟩ := arrive_n_fields arr (batchSize batches st.batch) (bwNextBatch st)
      exact ⟨h1.trans g1, h2.trans g2, h3.trans g3, h4.trans g4⟩
    · rw [bw_refill_loop_succ, if_neg hc]
      exact ⟨rfl, rfl, rfl, rfl⟩

/-- What the trace says about the state, kept along the run. -/
def TraceOk (R : Nat) (st : BX) (acc : List Event) : Prop :=
  st.starts = startRecords acc ∧ st.emitted = emittedSum acc ∧
  ∀ r, rowSum r acc = if r < st.row then R else if r = st.row then R - st.rem else 0

theorem trace_ok_refill (st : BX) (acc : List Event) (h : TraceOk R st acc) :
    TraceOk R (bwRefill B batches arr st) acc := by
  obtain ⟨h1, h2, h3⟩ := h
  obtain ⟨g1, g2, g3, g4⟩ := refill_loop_fields B batches arr (arr.length + 1) st
  refine ⟨?_, ?_, ?_⟩
  · show (bwRefillLoop B batches arr (arr.length + 1) st).starts = startRecords acc
    rw [g1]; exact h1
  · show (bwRefillLoop B batches arr (arr.length + 1) st).emitted = emittedSum acc
    rw [g2]; exact h2
  · intro r
    show rowSum r acc = if r < (bwRefillLoop B batches arr (arr.length + 1) st).row then R
      else if r = (bwRefillLoop B batches arr (arr.length + 1) st).row
        then R - (bwRefillLoop B batches arr (arr.length + 1) st).rem else 0
    rw [g3, g4]; exact h3 r

theorem trace_ok_emit (hR : 0 < R) (hB : 1 ≤ B) (st : BX) (acc : List Event) (k : Nat) (s : Span)
    (h : WReachable R B A (bmaxOf batches) (arrLen arr) (bproj st)) (ht : TraceOk R st acc)
    (hp : bwPick R A st = some (k, s)) :
    TraceOk R (bwEmitState R st k s) (bwEmitEvent R st s :: acc) := by
  obtain ⟨h1, h2, h3⟩ := ht
  have hok := bw_invariant R B A (bmaxOf batches) (arrLen arr) hR hB _ h
  obtain ⟨hn, _⟩ := bw_pick_spec R A st k s hp
  have hs : s ∈ st.buf := nth_error_In st.buf k s hn
  obtain ⟨_, _, hc, hco⟩ := hok.spans s hs
  have hr1 : 0 < st.rem := hok.rem_pos
  have hr2 : st.rem ≤ R := hok.rem_le
  refine ⟨?_, ?_, ?_⟩
  · show (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts) =
      ((bwEmitEvent R st s :: acc).filter (fun ev => decide (ev.start = 0))).map
        (fun ev => (ev.occ, ev.row))
    rw [List.filter_cons]
    by_cases hu : s.cur = s.orig
    · have hz : decide ((bwEmitEvent R st s).start = 0) = true := by
        show decide (s.orig - s.cur = 0) = true
        exact decide_eq_true (by omega)
      rw [if_pos hu, if_pos hz, List.map_cons, h1]
      try rfl
    · have hz : ¬ (decide ((bwEmitEvent R st s).start = 0) = true) := by
        show ¬ (decide (s.orig - s.cur = 0) = true)
        intro hd
        have := of_decide_eq_true hd
        omega
      rw [if_neg hu, if_neg hz, h1]
      try rfl
  · show st.emitted + min s.cur st.rem = min s.cur st.rem + emittedSum acc
    rw [h2]; omega
  · intro r
    show (if st.row = r then min s.cur st.rem else 0) + rowSum r acc =
      if r < (if st.rem - min s.cur st.rem = 0 then st.row + 1 else st.row) then R
      else if r = (if st.rem - min s.cur st.rem = 0 then st.row + 1 else st.row)
        then R - (if st.rem - min s.cur st.rem = 0 then R else st.rem - min s.cur st.rem) else 0
    rw [h3 r]
    by_cases hq : st.rem - min s.cur st.rem = 0
    · rw [if_pos hq, if_pos hq]
      repeat' split
      all_goals omega
    · rw [if_neg hq, if_neg hq]
      repeat' split
      all_goals omega

theorem bw_run_from_spec (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat) :
    ∀ (st : BX) (acc : List Event),
      WReachable R B A (bmaxOf batches) (arrLen arr) (bproj st) → st.narr ≤ arr.length →
      TraceOk R st acc →
      WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRunFrom R B A batches arr fuel st acc).state) ∧
      TraceOk R (bwRunFrom R B A batches arr fuel st acc).state
        (bwRunFrom R B A batches arr fuel st acc).trace.reverse := by
  induction fuel with
  | zero =>
    intro st acc h hn ht
    show WReachable R B A (bmaxOf batches) (arrLen arr) (bproj st) ∧ TraceOk R st acc.reverse.reverse
    rw [List.reverse_reverse]
    exact ⟨h, ht⟩
  | succ f ih =>
    intro st acc h hn ht
    obtain ⟨h1, hn1⟩ := refill_loop_reachable R B A batches arr hpos (arr.length + 1) st h hn
    have ht1 := trace_ok_refill R B batches arr st acc ht
    rw [bw_run_from_succ]
    by_cases hc : (bwRefill B batches arr st).buf.length < B
    · rw [if_pos hc]
      show WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRefill B batches arr st)) ∧
        TraceOk R (bwRefill B batches arr st) acc.reverse.reverse
      rw [List.reverse_reverse]
      exact ⟨h1, ht1⟩
    · rw [if_neg hc]
      rcases opt_cases (bwPick R A (bwRefill B batches arr st)) with hp | ⟨k, s, hp⟩
      · rw [hp]
        show WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRefill B batches arr st)) ∧
          TraceOk R (bwRefill B batches arr st) acc.reverse.reverse
        rw [List.reverse_reverse]
        exact ⟨h1, ht1⟩
      · rw [hp]
        show WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRunFrom R B A batches arr f
            (bwEmitState R (bwRefill B batches arr st) k s)
            (bwEmitEvent R (bwRefill B batches arr st) s :: acc)).state) ∧
          TraceOk R (bwRunFrom R B A batches arr f (bwEmitState R (bwRefill B batches arr st) k s)
            (bwEmitEvent R (bwRefill B batches arr st) s :: acc)).state
            (bwRunFrom R B A batches arr f (bwEmitState R (bwRefill B batches arr st) k s)
            (bwEmitEvent R (bwRefill B batches arr st) s :: acc)).trace.reverse
        have hs := bw_exec_select_refines R B A batches arr hR hB _ k s h1 hp
        have ht2 := trace_ok_emit R B A batches arr hR hB _ acc k s h1 ht1 hp
        exact ih _ _ (WReachable.step h1 hs) hn1 ht2

theorem bw_run_spec (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat) :
    WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRun R B A batches arr fuel).state) ∧
    TraceOk R (bwRun R B A batches arr fuel).state (bwRun R B A batches arr fuel).trace.reverse := by
  apply bw_run_from_spec R B A batches arr hR hB hpos fuel (bxinit R) []
  · exact WReachable.init
  · exact Nat.zero_le _
  · refine ⟨rfl, rfl, ?_⟩
    intro r
    show 0 = if r < 0 then R else if r = 0 then R - R else 0
    rw [if_neg (Nat.not_lt_zero r)]
    by_cases e : r = 0
    · rw [if_pos e, Nat.sub_self]
    · rw [if_neg e]

/-- Every state `bwRun` produces, for any fuel, is reachable. -/
theorem bw_run_reachable (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat) :
    WReachable R B A (bmaxOf batches) (arrLen arr) (bproj (bwRun R B A batches arr fuel).state) :=
  (bw_run_spec R B A batches arr hR hB hpos fuel).1

theorem row_sum_append (r : Nat) (l1 l2 : List Event) :
    rowSum r (l1 ++ l2) = rowSum r l1 + rowSum r l2 := by
  induction l1 with
  | nil => exact (Nat.zero_add _).symm
  | cons e t ih =>
    show (if e.row = r then e.emitted else 0) + rowSum r (t ++ l2) =
      ((if e.row = r then e.emitted else 0) + rowSum r t) + rowSum r l2
    rw [ih, Nat.add_assoc]

theorem row_sum_reverse (r : Nat) (l : List Event) : rowSum r l.reverse = rowSum r l := by
  induction l with
  | nil => rfl
  | cons e t ih =>
    rw [List.reverse_cons, row_sum_append, ih]
    show rowSum r t + ((if e.row = r then e.emitted else 0) + 0) =
      (if e.row = r then e.emitted else 0) + rowSum r t
    omega

theorem emitted_sum_append (l1 l2 : List Event) :
    emittedSum (l1 ++ l2) = emittedSum l1 + emittedSum l2 := by
  induction l1 with
  | nil => exact (Nat.zero_add _).symm
  | cons e t ih =>
    show e.emitted + emittedSum (t ++ l2) = (e.emitted + emittedSum t) + emittedSum l2
    rw [ih, Nat.add_assoc]

theorem emitted_sum_reverse (l : List Event) : emittedSum l.reverse = emittedSum l := by
  induction l with
  | nil => rfl
  | cons e t ih =>
    rw [List.reverse_cons, emitted_sum_append, ih]
    show emittedSum t + (e.emitted + 0) = e.emitted + emittedSum t
    omega

theorem start_records_of (l : List Event) (ev : Event) (hin : ev ∈ l) (hz : ev.start = 0) :
    (ev.occ, ev.row) ∈ startRecords l := by
  unfold startRecords
  exact List.mem_map.mpr ⟨ev, List.mem_filter.mpr ⟨hin, decide_eq_true hz⟩, rfl⟩

theorem start_records_in (l : List Event) (i r : Nat) (h : (i, r) ∈ startRecords l) :
    ∃ ev, ev ∈ l ∧ ev.occ = i ∧ ev.row = r ∧ ev.start = 0 := by
  unfold startRecords at h
  obtain ⟨ev, hin, he⟩ := List.mem_map.mp h
  obtain ⟨hin', hz⟩ := List.mem_filter.mp hin
  exact ⟨ev, hin', congrArg Prod.fst he, congrArg Prod.snd he, of_decide_eq_true hz⟩

/-- The bound on the trace: the first event of an occurrence (`start = 0`) is in a
row at most `bwDelayBound` rows after its arrival row. -/
theorem bw_run_start_bound (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat)
    (ev : Event) (hin : ev ∈ (bwRun R B A batches arr fuel).trace) (hz : ev.start = 0) :
    ev.row ≤ nthD (bwRun R B A batches arr fuel).state.arows ev.occ + bwDelayBound B A batches := by
  obtain ⟨h, hs, _⟩ := bw_run_spec R B A batches arr hR hB hpos fuel
  apply bw_start_bound R B A (bmaxOf batches) (arrLen arr) hR hB _ ev.occ ev.row h
  show (ev.occ, ev.row) ∈ (bwRun R B A batches arr fuel).state.starts
  rw [hs]
  exact start_records_of _ ev (List.mem_reverse.mpr hin) hz

/-- An arrived occurrence absent from the trace is buffered whole, and the run is
at most `bwDelayBound` rows past its arrival row. -/
theorem bw_run_unstarted_bound (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x)
    (fuel i : Nat) (hi : i < (bwRun R B A batches arr fuel).state.narr)
    (hns : i ∉ (bwRun R B A batches arr fuel).trace.map Event.occ) :
    (⟨i, arrLen arr i, arrLen arr i⟩ : Span) ∈ (bwRun R B A batches arr fuel).state.buf ∧
    (bwRun R B A batches arr fuel).state.row ≤
      nthD (bwRun R B A batches arr fuel).state.arows i + bwDelayBound B A batches := by
  obtain ⟨h, hs, _⟩ := bw_run_spec R B A batches arr hR hB hpos fuel
  apply bw_unstarted_bound R B A (bmaxOf batches) (arrLen arr) hR hB _ i h hi
  show i ∉ (bwRun R B A batches arr fuel).state.starts.map Prod.fst
  rw [hs]
  intro hin
  obtain ⟨⟨i', r⟩, hin', he⟩ := List.mem_map.mp hin
  have e : i' = i := he
  rw [e] at hin'
  obtain ⟨ev, hev, ho, _, _⟩ := start_records_in _ i r hin'
  exact hns (List.mem_map.mpr ⟨ev, List.mem_reverse.mp hev, ho⟩)

/-- No token is discarded: arrived tokens = emitted + buffered. -/
theorem bw_run_conservation (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat) :
    sumLen (arrLen arr) (seqN 0 (bwRun R B A batches arr fuel).state.narr) =
      emittedSum (bwRun R B A batches arr fuel).trace + mass (bwRun R B A batches arr fuel).state.buf := by
  obtain ⟨h, _, he, _⟩ := bw_run_spec R B A batches arr hR hB hpos fuel
  rw [← emitted_sum_reverse, ← he]
  exact bw_conservation R B A (bmaxOf batches) (arrLen arr) hR hB _ h

/-- Rows are full: every row before the current one holds exactly `R` emitted
tokens, the current one `R - rem`, later ones none. -/
theorem bw_run_rows_full (hR : 0 < R) (hB : 1 ≤ B) (hpos : ∀ x, x ∈ arr → 0 < x) (fuel : Nat) :
    (∀ r, r < (bwRun R B A batches arr fuel).state.row →
      rowSum r (bwRun R B A batches arr fuel).trace = R) ∧
    rowSum (bwRun R B A batches arr fuel).state.row (bwRun R B A batches arr fuel).trace =
      R - (bwRun R B A batches arr fuel).state.rem ∧
    0 < (bwRun R B A batches arr fuel).state.rem ∧ (bwRun R B A batches arr fuel).state.rem ≤ R ∧
    (∀ r, (bwRun R B A batches arr fuel).state.row < r →
      rowSum r (bwRun R B A batches arr fuel).trace = 0) := by
  obtain ⟨h, _, _, hr⟩ := bw_run_spec R B A batches arr hR hB hpos fuel
  obtain ⟨_, hrem1, hrem2⟩ := bw_rows_full R B A (bmaxOf batches) (arrLen arr) hR hB _ h
  refine ⟨?_, ?_, hrem1, hrem2, ?_⟩
  · intro r hlt
    rw [← row_sum_reverse, hr r, if_pos hlt]
  · rw [← row_sum_reverse, hr, if_neg (Nat.lt_irrefl _), if_pos rfl]
  · intro r hgt
    have h1 : ¬ r < (bwRun R B A batches arr fuel).state.row := by omega
    have h2 : ¬ r = (bwRun R B A batches arr fuel).state.row := by omega
    rw [← row_sum_reverse, hr r, if_neg h1, if_neg h2]

end

/-! ## The bound is attained (see the Coq file for the construction). -/

def firstStartRow (i : Nat) (tr : List Event) : Option Nat :=
  match tr.filter (fun ev => decide (ev.occ = i) && decide (ev.start = 0)) with
  | ev :: _ => some ev.row
  | [] => none

def tightArr : List Nat := [12, 13, 1, 1, 13, 13]

theorem bw_bound_attained_example :
    nthD (bwRun 4 3 1 [2] tightArr 100).state.arows 5 = 0 ∧
    firstStartRow 5 (bwRun 4 3 1 [2] tightArr 100).trace = some (0 + bwDelayBound 3 1 [2]) ∧
    bwDelayBound 3 1 [2] = 4 := by
  decide

end PackingTheory
