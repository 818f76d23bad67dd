import PackingTheory.Defs

/-!
# BoundedWait: a lossless streaming packer with a proved start-delay bound

Mirror of `proofs/coq/BoundedWait.v` (core Lean 4 only).

The `bounded-wait` policy keeps the loader's selection rule and the `continue`
semantics, and adds one rule: at a row start, when the oldest unstarted
buffered span arrived more than `A` rows ago, it is placed first in the row.
`WStep` is a permissive relation for it (batches of `1 ≤ k ≤ bmax` arrivals only
while fewer than `B` spans are buffered; any selection of `1 ≤ m ≤ min cur rem`
tokens of any span, except that an overdue oldest unstarted span must be taken
at a row start; a span is removed when emptied and kept in place otherwise).
In every reachable state:

* `bw_start_bound`: every started occurrence started at most
  `bwBound B A bmax = A + B + bmax - 2` rows after its arrival row;
* `bw_unstarted_bound`: every arrived, unstarted occurrence is buffered whole and
  at most `bwBound` rows past its arrival row;
* `bw_conservation`: arrived tokens = emitted + buffered (no discard);
* `bw_rows_full`: `emitted = row * R + (R - rem)`;
* `bw_arows_prefix`: arrival rows never change.

Differences in form (not in meaning) from the Coq file: the count `cnt` is
defined by recursion (`cntL`), `fresh` and `repeatN` by recursion, the
buffered mass is `mass` of `Defs.lean` (Coq uses a local copy `bw_mass` and
proves it equal), `done`/`late` are named `doneRows`/`lateFlag` (`done` is a
tactic name), and the invariant record `wok` is the structure `WOk`.
-/

namespace PackingTheory

structure WState where
  narr : Nat
  buf : Buffer
  row : Nat
  rem : Nat
  arows : List Nat
  starts : List (Nat × Nat)
  emitted : Nat

/-- The oldest unstarted span: the first one in buffer order with `cur = orig`. -/
def firstUnstarted : Buffer → Option Span
  | [] => none
  | s :: t => if s.cur = s.orig then some s else firstUnstarted t

/-- Unstarted spans at or before occurrence `i` (Coq `cnt`). -/
def cntL (i : Nat) : Buffer → Nat
  | [] => 0
  | s :: t => (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i t

/-- `repeatN x k = [x, ..., x]` (`k` times; Coq `repeat`). -/
def repeatN (x : Nat) : Nat → List Nat
  | 0 => []
  | k + 1 => x :: repeatN x k

/-- A batch of `k` new occurrences `n .. n+k-1`, unchanged. -/
def fresh (len : Nat → Nat) : Nat → Nat → Buffer
  | _, 0 => []
  | n, k + 1 => ⟨n, len n, len n⟩ :: fresh len (n + 1) k

/-- The start-delay bound, in rows. -/
def bwBound (B A bmax : Nat) : Nat := A + B + bmax - 2

def arow (st : WState) (i : Nat) : Nat := nthD st.arows i

/-- The forced case: at a row start, the oldest unstarted span `u` is overdue. -/
def forced (R A : Nat) (st : WState) (u : Span) : Prop :=
  st.rem = R ∧ firstUnstarted st.buf = some u ∧ A < st.row - arow st u.sid

/-- The state after emitting `m` tokens of `s` (buffer `b1 ++ s :: b2`). -/
def afterSelect (R : Nat) (st : WState) (b1 : Buffer) (s : Span) (b2 : Buffer) (m : Nat) :
    WState :=
  ⟨st.narr,
   (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2),
   (if st.rem - m = 0 then st.row + 1 else st.row),
   (if st.rem - m = 0 then R else st.rem - m),
   st.arows,
   (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts),
   st.emitted + m⟩

inductive WStep (R B A bmax : Nat) (len : Nat → Nat) : WState → WState → Prop
  | arrive (st : WState) (k : Nat) :
      st.buf.length < B → 1 ≤ k → k ≤ bmax →
      (∀ j, st.narr ≤ j → j < st.narr + k → 0 < len j) →
      WStep R B A bmax len st
        ⟨st.narr + k, st.buf ++ fresh len st.narr k, st.row, st.rem,
         st.arows ++ repeatN st.row k, st.starts, st.emitted⟩
  | select (st : WState) (b1 : Buffer) (s : Span) (b2 : Buffer) (m : Nat) :
      st.buf = b1 ++ s :: b2 → 1 ≤ m → m ≤ s.cur → m ≤ st.rem →
      (∀ u, forced R A st u → s = u) →
      WStep R B A bmax len st (afterSelect R st b1 s b2 m)

def winit (R : Nat) : WState := ⟨0, [], 0, R, [], [], 0⟩

inductive WReachable (R B A bmax : Nat) (len : Nat → Nat) : WState → Prop
  | init : WReachable R B A bmax len (winit R)
  | step {st st' : WState} :
      WReachable R B A bmax len st → WStep R B A bmax len st st' → WReachable R B A bmax len st'

/-- Forced row starts after row `a + A` whose check has run (Coq `done`). -/
def doneRows (R A : Nat) (st : WState) (i : Nat) : Nat :=
  if st.rem = R then st.row - (arow st i + A + 1) else st.row - (arow st i + A)

/-- `1` once a row boundary has passed since the arrival of `i` (Coq `late`). -/
def lateFlag (st : WState) (i : Nat) : Nat := if arow st i < st.row then 1 else 0

structure WOk (R B A bmax : Nat) (len : Nat → Nat) (st : WState) : Prop where
  rem_pos : 0 < st.rem
  rem_le : st.rem ≤ R
  arows_len : st.arows.length = st.narr
  arows_mono : ∀ i j, i ≤ j → j < st.narr → arow st i ≤ arow st j
  arows_row : ∀ i, i < st.narr → arow st i ≤ st.row
  spans : ∀ s, s ∈ st.buf → s.sid < st.narr ∧ s.orig = len s.sid ∧ 0 < s.cur ∧ s.cur ≤ s.orig
  incr : incrIds st.buf
  size : st.buf.length ≤ B - 1 + bmax
  wait : ∀ s, s ∈ st.buf → s.cur = s.orig →
    cntL s.sid st.buf + doneRows R A st s.sid + lateFlag st s.sid ≤ B + bmax - 1
  starts_ok : ∀ i r, (i, r) ∈ st.starts → i < st.narr ∧ r ≤ arow st i + bwBound B A bmax
  unstarted : ∀ i, i < st.narr → i ∉ st.starts.map Prod.fst →
    ∃ s, s ∈ st.buf ∧ s.sid = i ∧ s.cur = s.orig
  mass_ok : sumLen len (seqN 0 st.narr) = st.emitted + mass st.buf
  rows_ok : st.emitted = st.row * R + (R - st.rem)

/-! ## Toolkit -/

theorem cntL_append (i : Nat) (b1 b2 : Buffer) : cntL i (b1 ++ b2) = cntL i b1 + cntL i b2 := by
  induction b1 with
  | nil => exact (Nat.zero_add _).symm
  | cons s t ih =>
    show (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i (t ++ b2) =
      ((if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i t) + cntL i b2
    rw [ih, Nat.add_assoc]

theorem cntL_cons_le (i : Nat) (s : Span) (b : Buffer) :
    cntL i (s :: b) ≤ 1 + cntL i b := by
  show (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i b ≤ 1 + cntL i b
  by_cases h : s.sid ≤ i ∧ s.cur = s.orig
  · rw [if_pos h]
    exact Nat.le_refl _
  · rw [if_neg h]
    omega

theorem cntL_le_length (i : Nat) (b : Buffer) : cntL i b ≤ b.length := by
  induction b with
  | nil => exact Nat.le_refl 0
  | cons s t ih =>
    have := cntL_cons_le i s t
    rw [List.length_cons]
    omega

theorem cntL_pos (i : Nat) (b : Buffer) (t : Span) (hin : t ∈ b) (hle : t.sid ≤ i)
    (hu : t.cur = t.orig) : 1 ≤ cntL i b := by
  induction b with
  | nil => cases hin
  | cons s b ih =>
    show 1 ≤ (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i b
    rw [List.mem_cons] at hin
    cases hin with
    | inl e =>
      rw [← e]
      rw [if_pos ⟨hle, hu⟩]
      omega
    | inr hin =>
      have := ih hin
      omega

/-- The count with a selected span `s` taken out. -/
theorem cntL_select (i : Nat) (b1 : Buffer) (s : Span) (b2 : Buffer) :
    cntL i (b1 ++ s :: b2) =
      cntL i (b1 ++ b2) + (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) := by
  rw [cntL_append, cntL_append]
  show cntL i b1 + ((if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0) + cntL i b2) =
    cntL i b1 + cntL i b2 + (if s.sid ≤ i ∧ s.cur = s.orig then 1 else 0)
  omega

theorem cntL_keep (i : Nat) (b1 : Buffer) (s' : Span) (b2 : Buffer) (h : s'.cur ≠ s'.orig) :
    cntL i (b1 ++ s' :: b2) = cntL i (b1 ++ b2) := by
  rw [cntL_select]
  have hn : ¬ (s'.sid ≤ i ∧ s'.cur = s'.orig) := fun hc => h hc.2
  rw [if_neg hn]
  rfl

theorem first_unstarted_in (b : Buffer) (u : Span) (h : firstUnstarted b = some u) :
    u ∈ b ∧ u.cur = u.orig := by
  induction b with
  | nil => cases h
  | cons s t ih =>
    have h' : (if s.cur = s.orig then some s else firstUnstarted t) = some u := h
    by_cases hs : s.cur = s.orig
    · rw [if_pos hs] at h'
      have e : s = u := Option.some.inj h'
      rw [← e]
      exact ⟨List.Mem.head _, hs⟩
    · rw [if_neg hs] at h'
      obtain ⟨h1, h2⟩ := ih h'
      exact ⟨List.Mem.tail _ h1, h2⟩

theorem first_unstarted_exists (b : Buffer) (t : Span) (hin : t ∈ b) (hu : t.cur = t.orig) :
    ∃ u, firstUnstarted b = some u := by
  induction b with
  | nil => cases hin
  | cons s b ih =>
    show ∃ u, (if s.cur = s.orig then some s else firstUnstarted b) = some u
    by_cases hs : s.cur = s.orig
    · rw [if_pos hs]
      exact ⟨s, rfl⟩
    · rw [if_neg hs]
      rw [List.mem_cons] at hin
      cases hin with
      | inl e =>
        rw [← e] at hs
        exact absurd hu hs
      | inr hin => exact ih hin

theorem first_unstarted_min (b : Buffer) (u t : Span) (hi : incrIds b)
    (h : firstUnstarted b = some u) (hin : t ∈ b) (hu : t.cur = t.orig) : u.sid ≤ t.sid := by
  induction b with
  | nil => cases hin
  | cons s b ih =>
    obtain ⟨hs, hi'⟩ := hi
    have h' : (if s.cur = s.orig then some s else firstUnstarted b) = some u := h
    rw [List.mem_cons] at hin
    by_cases hc : s.cur = s.orig
    · rw [if_pos hc] at h'
      have e : s = u := Option.some.inj h'
      rw [← e]
      cases hin with
      | inl et =>
        rw [et]
        exact Nat.le_refl _
      | inr hin => exact Nat.le_of_lt (hs t hin)
    · rw [if_neg hc] at h'
      cases hin with
      | inl et =>
        rw [et] at hu
        exact absurd hu hc
      | inr hin => exact ih hi' h' hin

theorem nthD_append_left (l l' : List Nat) (i : Nat) (h : i < l.length) :
    nthD (l ++ l') i = nthD l i := by
  induction l generalizing i with
  | nil => exact absurd h (Nat.not_lt_zero _)
  | cons x t ih =>
    cases i with
    | zero => rfl
    | succ i =>
      show nthD (t ++ l') i = nthD t i
      exact ih i (by rw [List.length_cons] at h; omega)

theorem nthD_append_right (l l' : List Nat) (i : Nat) (h : l.length ≤ i) :
    nthD (l ++ l') i = nthD l' (i - l.length) := by
  induction l generalizing i with
  | nil => rfl
  | cons x t ih =>
    cases i with
    | zero => rw [List.length_cons] at h; omega
    | succ i =>
      show nthD (t ++ l') i = nthD l' (i + 1 - (t.length + 1))
      rw [List.length_cons] at h
      have e : i + 1 - (t.length + 1) = i - t.length := by omega
      rw [e]
      exact ih i (by omega)

theorem nthD_repeatN (x k j : Nat) (h : j < k) : nthD (repeatN x k) j = x := by
  induction k generalizing j with
  | zero => exact absurd h (Nat.not_lt_zero _)
  | succ k ih =>
    cases j with
    | zero => rfl
    | succ j => exact ih j (by omega)

theorem length_repeatN (x k : Nat) : (repeatN x k).length = k := by
  induction k with
  | zero => rfl
  | succ k ih => show (repeatN x k).length + 1 = k + 1; rw [ih]

theorem length_fresh (len : Nat → Nat) (n k : Nat) : (fresh len n k).length = k := by
  induction k generalizing n with
  | zero => rfl
  | succ k ih => show (fresh len (n + 1) k).length + 1 = k + 1; rw [ih]

theorem mem_fresh (len : Nat → Nat) (n k : Nat) (s : Span) (h : s ∈ fresh len n k) :
    n ≤ s.sid ∧ s.sid < n + k ∧ s = ⟨s.sid, len s.sid, len s.sid⟩ := by
  induction k generalizing n with
  | zero => cases h
  | succ k ih =>
    have h' : s ∈ (⟨n, len n, len n⟩ : Span) :: fresh len (n + 1) k := h
    rw [List.mem_cons] at h'
    cases h' with
    | inl e =>
      rw [e]
      exact ⟨Nat.le_refl n, by show n < n + (k + 1); omega, rfl⟩
    | inr h' =>
      obtain ⟨h1, h2, h3⟩ := ih (n + 1) h'
      exact ⟨by omega, by omega, h3⟩

theorem fresh_mem_of (len : Nat → Nat) (n k i : Nat) (h1 : n ≤ i) (h2 : i < n + k) :
    (⟨i, len i, len i⟩ : Span) ∈ fresh len n k := by
  induction k generalizing n with
  | zero => omega
  | succ k ih =>
    show (⟨i, len i, len i⟩ : Span) ∈ (⟨n, len n, len n⟩ : Span) :: fresh len (n + 1) k
    by_cases e : i = n
    · rw [e]
      exact List.Mem.head _
    · exact List.Mem.tail _ (ih (n + 1) (by omega) (by omega))

theorem incr_ids_fresh (len : Nat → Nat) (n k : Nat) : incrIds (fresh len n k) := by
  induction k generalizing n with
  | zero => trivial
  | succ k ih =>
    show (∀ u, u ∈ fresh len (n + 1) k → n < u.sid) ∧ incrIds (fresh len (n + 1) k)
    refine ⟨?_, ih (n + 1)⟩
    intro u hu
    obtain ⟨h1, _, _⟩ := mem_fresh len (n + 1) k u hu
    omega

theorem cntL_fresh (len : Nat → Nat) (i n k : Nat) (h : i < n) : cntL i (fresh len n k) = 0 := by
  induction k generalizing n with
  | zero => rfl
  | succ k ih =>
    show (if n ≤ i ∧ len n = len n then 1 else 0) + cntL i (fresh len (n + 1) k) = 0
    have hn : ¬ (n ≤ i ∧ len n = len n) := fun hc => Nat.lt_irrefl n (Nat.lt_of_le_of_lt hc.1 h)
    rw [if_neg hn, ih (n + 1) (by omega)]

theorem mass_append' (b1 b2 : Buffer) : mass (b1 ++ b2) = mass b1 + mass b2 := by
  induction b1 with
  | nil => exact (Nat.zero_add _).symm
  | cons s t ih =>
    show s.cur + mass (t ++ b2) = (s.cur + mass t) + mass b2
    rw [ih, Nat.add_assoc]

theorem mass_fresh (len : Nat → Nat) (n k : Nat) : mass (fresh len n k) = sumLen len (seqN n k) := by
  induction k generalizing n with
  | zero => rfl
  | succ k ih =>
    show len n + mass (fresh len (n + 1) k) = len n + sumLen len (seqN (n + 1) k)
    rw [ih]

theorem sumLen_append (len : Nat → Nat) (l1 l2 : List Nat) :
    sumLen len (l1 ++ l2) = sumLen len l1 + sumLen len l2 := by
  induction l1 with
  | nil => exact (Nat.zero_add _).symm
  | cons x t ih =>
    show len x + sumLen len (t ++ l2) = (len x + sumLen len t) + sumLen len l2
    rw [ih, Nat.add_assoc]

theorem mass_select (b1 : Buffer) (s : Span) (b2 : Buffer) :
    mass (b1 ++ s :: b2) = mass (b1 ++ b2) + s.cur := by
  rw [mass_append', mass_append']
  show mass b1 + (s.cur + mass b2) = mass b1 + mass b2 + s.cur
  omega

theorem incr_ids_keep (b1 : Buffer) (s s' : Span) (b2 : Buffer) (hid : s'.sid = s.sid)
    (hi : incrIds (b1 ++ s :: b2)) : incrIds (b1 ++ s' :: b2) := by
  obtain ⟨hi1, ⟨hs, hi2⟩, hi3⟩ := (incr_ids_app b1 (s :: b2)).mp hi
  apply (incr_ids_app b1 (s' :: b2)).mpr
  refine ⟨hi1, ⟨?_, hi2⟩, ?_⟩
  · intro u hu
    rw [hid]
    exact hs u hu
  · intro x y hx hy
    rw [List.mem_cons] at hy
    cases hy with
    | inl e =>
      rw [e, hid]
      exact hi3 x s hx (List.Mem.head _)
    | inr hy => exact hi3 x y hx (List.Mem.tail _ hy)

theorem incr_ids_remove (b1 : Buffer) (s : Span) (b2 : Buffer)
    (hi : incrIds (b1 ++ s :: b2)) : incrIds (b1 ++ b2) := by
  obtain ⟨hi1, ⟨_, hi2⟩, hi3⟩ := (incr_ids_app b1 (s :: b2)).mp hi
  apply (incr_ids_app b1 b2).mpr
  exact ⟨hi1, hi2, fun x y hx hy => hi3 x y hx (List.Mem.tail _ hy)⟩

theorem mem_select_sub (b1 : Buffer) (s : Span) (b2 : Buffer) (t : Span) (h : t ∈ b1 ++ b2) :
    t ∈ b1 ++ s :: b2 := by
  rw [List.mem_append] at h
  rw [List.mem_append]
  cases h with
  | inl h => exact Or.inl h
  | inr h => exact Or.inr (List.Mem.tail _ h)

/-- The new buffer after a selection: `b1 ++ b2`, or `b1 ++ s' :: b2` with a
started `s'` of the same occurrence. -/
theorem after_select_buf (R : Nat) (st : WState) (b1 : Buffer) (s : Span) (b2 : Buffer) (m : Nat)
    (t' : Span) (ht : t' ∈ (afterSelect R st b1 s b2 m).buf) :
    t' ∈ b1 ++ b2 ∨ (t' = Span.mk s.sid s.orig (s.cur - m) ∧ m ≠ s.cur) := by
  have ht' : t' ∈ (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2) :=
    ht
  by_cases hm : m = s.cur
  · rw [if_pos hm] at ht'
    exact Or.inl ht'
  · rw [if_neg hm] at ht'
    rw [List.mem_append] at ht'
    cases ht' with
    | inl h => exact Or.inl (List.mem_append.mpr (Or.inl h))
    | inr h =>
      rw [List.mem_cons] at h
      cases h with
      | inl e => exact Or.inr ⟨e, hm⟩
      | inr h => exact Or.inl (List.mem_append.mpr (Or.inr h))

/-! ## The invariant -/

section
variable (R B A bmax : Nat) (len : Nat → Nat)

theorem wok_init (hR : 0 < R) : WOk R B A bmax len (winit R) :=
  { rem_pos := hR
    rem_le := Nat.le_refl R
    arows_len := rfl
    arows_mono := fun _ j _ hj => absurd hj (Nat.not_lt_zero j)
    arows_row := fun i hi => absurd hi (Nat.not_lt_zero i)
    spans := fun _ hs => absurd hs (List.not_mem_nil _)
    incr := trivial
    size := Nat.zero_le _
    wait := fun _ hs _ => absurd hs (List.not_mem_nil _)
    starts_ok := fun _ _ hs => absurd hs (List.not_mem_nil _)
    unstarted := fun i hi _ => absurd hi (Nat.not_lt_zero i)
    mass_ok := rfl
    rows_ok := by show 0 = 0 * R + (R - R); omega }

/-- The bound read off the invariant, for one unstarted buffered span. -/
theorem wait_bound_of (st : WState) (s : Span) (hok : WOk R B A bmax len st) (hin : s ∈ st.buf)
    (hu : s.cur = s.orig) : st.row ≤ arow st s.sid + bwBound B A bmax := by
  have hw := hok.wait s hin hu
  have hc := cntL_pos s.sid st.buf s hin (Nat.le_refl _) hu
  unfold doneRows lateFlag at hw
  unfold bwBound
  by_cases h1 : st.rem = R
  · rw [if_pos h1] at hw
    by_cases h2 : arow st s.sid < st.row
    · rw [if_pos h2] at hw
      omega
    · rw [if_neg h2] at hw
      omega
  · rw [if_neg h1] at hw
    by_cases h2 : arow st s.sid < st.row
    · rw [if_pos h2] at hw
      omega
    · rw [if_neg h2] at hw
      omega

theorem wok_arrive (st : WState) (k : Nat) (hok : WOk R B A bmax len st)
    (hlen : st.buf.length < B) (hk1 : 1 ≤ k) (hk2 : k ≤ bmax)
    (hpos : ∀ j, st.narr ≤ j → j < st.narr + k → 0 < len j) :
    WOk R B A bmax len
      ⟨st.narr + k, st.buf ++ fresh len st.narr k, st.row, st.rem,
       st.arows ++ repeatN st.row k, st.starts, st.emitted⟩ := by
  have hal := hok.arows_len
  -- the arrival rows after the step
  have hold : ∀ i, i < st.narr → nthD (st.arows ++ repeatN st.row k) i = arow st i := by
    intro i hi
    exact nthD_append_left st.arows _ i (by omega)
  have hnew : ∀ i, st.narr ≤ i → i < st.narr + k →
      nthD (st.arows ++ repeatN st.row k) i = st.row := by
    intro i h1 h2
    rw [nthD_append_right st.arows _ i (by omega)]
    exact nthD_repeatN st.row k _ (by omega)
  refine ⟨hok.rem_pos, hok.rem_le, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_⟩
  · show (st.arows ++ repeatN st.row k).length = st.narr + k
    rw [List.length_append, length_repeatN, hal]
  · intro i j hij hj
    have hjk : j < st.narr + k := hj
    show nthD (st.arows ++ repeatN st.row k) i ≤ nthD (st.arows ++ repeatN st.row k) j
    by_cases hj' : j < st.narr
    · rw [hold i (by omega), hold j hj']
      exact hok.arows_mono i j hij hj'
    · rw [hnew j (by omega) hjk]
      by_cases hi' : i < st.narr
      · rw [hold i hi']
        exact hok.arows_row i hi'
      · rw [hnew i (by omega) (by omega)]
        exact Nat.le_refl _
  · intro i hi
    show nthD (st.arows ++ repeatN st.row k) i ≤ st.row
    by_cases hi' : i < st.narr
    · rw [hold i hi']
      exact hok.arows_row i hi'
    · rw [hnew i (by omega) hi]
      exact Nat.le_refl _
  · intro s hs
    rw [List.mem_append] at hs
    cases hs with
    | inl hs =>
      obtain ⟨h1, h2⟩ := hok.spans s hs
      exact ⟨by show s.sid < st.narr + k; omega, h2⟩
    | inr hs =>
      obtain ⟨h1, h2, h3⟩ := mem_fresh len st.narr k s hs
      have e1 : s.orig = len s.sid := congrArg Span.orig h3
      have e2 : s.cur = len s.sid := congrArg Span.cur h3
      refine ⟨by show s.sid < st.narr + k; omega, e1, ?_, ?_⟩
      · rw [e2]
        exact hpos s.sid h1 h2
      · rw [e1, e2]
        exact Nat.le_refl _
  · show incrIds (st.buf ++ fresh len st.narr k)
    apply (incr_ids_app st.buf (fresh len st.narr k)).mpr
    refine ⟨hok.incr, incr_ids_fresh len st.narr k, ?_⟩
    intro x y hx hy
    have h1 := (hok.spans x hx).1
    have h2 := (mem_fresh len st.narr k y hy).1
    omega
  · show (st.buf ++ fresh len st.narr k).length ≤ B - 1 + bmax
    rw [List.length_append, length_fresh]
    omega
  · intro s hs hu
    show cntL s.sid (st.buf ++ fresh len st.narr k) +
        doneRows R A ⟨st.narr + k, st.buf ++ fresh len st.narr k, st.row, st.rem,
          st.arows ++ repeatN st.row k, st.starts, st.emitted⟩ s.sid +
        lateFlag ⟨st.narr + k, st.buf ++ fresh len st.narr k, st.row, st.rem,
          st.arows ++ repeatN st.row k, st.starts, st.emitted⟩ s.sid ≤ B + bmax - 1
    show cntL s.sid (st.buf ++ fresh len st.narr k) +
        (if st.rem = R then st.row - (nthD (st.arows ++ repeatN st.row k) s.sid + A + 1)
         else st.row - (nthD (st.arows ++ repeatN st.row k) s.sid + A)) +
        (if nthD (st.arows ++ repeatN st.row k) s.sid < st.row then 1 else 0) ≤ B + bmax - 1
    rw [List.mem_append] at hs
    cases hs with
    | inl hs =>
      have h1 := (hok.spans s hs).1
      rw [cntL_append, cntL_fresh len s.sid st.narr k h1, Nat.add_zero, hold s.sid h1]
      exact hok.wait s hs hu
    | inr hs =>
      obtain ⟨h1, h2, _⟩ := mem_fresh len st.narr k s hs
      rw [hnew s.sid h1 h2]
      have hc := cntL_le_length s.sid (st.buf ++ fresh len st.narr k)
      rw [List.length_append, length_fresh] at hc
      have hl : ¬ st.row < st.row := Nat.lt_irrefl _
      rw [if_neg hl]
      by_cases hr : st.rem = R
      · rw [if_pos hr]
        omega
      · rw [if_neg hr]
        omega
  · intro i r hin
    obtain ⟨h1, h2⟩ := hok.starts_ok i r hin
    refine ⟨by show i < st.narr + k; omega, ?_⟩
    show r ≤ nthD (st.arows ++ repeatN st.row k) i + bwBound B A bmax
    rw [hold i h1]
    exact h2
  · intro i hi hns
    by_cases hi' : i < st.narr
    · obtain ⟨s, h1, h2⟩ := hok.unstarted i hi' hns
      exact ⟨s, List.mem_append.mpr (Or.inl h1), h2⟩
    · refine ⟨⟨i, len i, len i⟩, ?_, rfl, rfl⟩
      exact List.mem_append.mpr (Or.inr (fresh_mem_of len st.narr k i (by omega) hi))
  · show sumLen len (seqN 0 (st.narr + k)) = st.emitted + mass (st.buf ++ fresh len st.narr k)
    rw [seqN_add, sumLen_append, mass_append', mass_fresh, hok.mass_ok, Nat.zero_add]
    omega
  · exact hok.rows_ok

theorem wok_select (hB : 1 ≤ B) (st : WState) (b1 : Buffer) (s : Span) (b2 : Buffer) (m : Nat)
    (hok : WOk R B A bmax len st) (hb : st.buf = b1 ++ s :: b2)
    (hm1 : 1 ≤ m) (hm2 : m ≤ s.cur) (hm3 : m ≤ st.rem)
    (hforced : ∀ u, forced R A st u → s = u) :
    WOk R B A bmax len (afterSelect R st b1 s b2 m) := by
  have hs : s ∈ st.buf := by rw [hb]; exact List.mem_append.mpr (Or.inr (List.Mem.head _))
  obtain ⟨hs1, hs2, hs3, hs4⟩ := hok.spans s hs
  have hsub : ∀ t, t ∈ b1 ++ b2 → t ∈ st.buf := by
    intro t ht
    rw [hb]
    exact mem_select_sub b1 s b2 t ht
  have hlen : st.buf.length = (b1 ++ b2).length + 1 := by
    rw [hb, List.length_append, List.length_append, List.length_cons]
    omega
  -- the new buffer never counts the selected span
  have hcnt : ∀ i, cntL i (afterSelect R st b1 s b2 m).buf = cntL i (b1 ++ b2) := by
    intro i
    show cntL i (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2) =
      cntL i (b1 ++ b2)
    by_cases hm : m = s.cur
    · rw [if_pos hm]
    · rw [if_neg hm]
      exact cntL_keep i b1 _ b2 (by show s.cur - m ≠ s.orig; omega)
  have hrem1 := hok.rem_pos
  have hrem2 := hok.rem_le
  have hsize := hok.size
  -- the row and rem after the step
  have hrow : (afterSelect R st b1 s b2 m).row = if st.rem - m = 0 then st.row + 1 else st.row :=
    rfl
  have hremv : (afterSelect R st b1 s b2 m).rem = if st.rem - m = 0 then R else st.rem - m := rfl
  have harow : ∀ i, arow (afterSelect R st b1 s b2 m) i = arow st i := fun _ => rfl
  refine ⟨?_, ?_, hok.arows_len, hok.arows_mono, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_, ?_⟩
  · rw [hremv]
    by_cases hq : st.rem - m = 0
    · rw [if_pos hq]
      exact Nat.lt_of_lt_of_le hrem1 hrem2
    · rw [if_neg hq]
      omega
  · rw [hremv]
    by_cases hq : st.rem - m = 0
    · rw [if_pos hq]
      exact Nat.le_refl R
    · rw [if_neg hq]
      omega
  · intro i hi
    rw [harow, hrow]
    have := hok.arows_row i hi
    by_cases hq : st.rem - m = 0
    · rw [if_pos hq]
      omega
    · rw [if_neg hq]
      exact this
  · intro t ht
    cases after_select_buf R st b1 s b2 m t ht with
    | inl ht' => exact hok.spans t (hsub t ht')
    | inr h =>
      obtain ⟨e, hne⟩ := h
      rw [e]
      exact ⟨hs1, hs2, by show 0 < s.cur - m; omega, by show s.cur - m ≤ s.orig; omega⟩
  · have hi := hok.incr
    rw [hb] at hi
    show incrIds (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2)
    by_cases hm : m = s.cur
    · rw [if_pos hm]
      exact incr_ids_remove b1 s b2 hi
    · rw [if_neg hm]
      exact incr_ids_keep b1 s _ b2 rfl hi
  · show (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2).length ≤
      B - 1 + bmax
    by_cases hm : m = s.cur
    · rw [if_pos hm]
      omega
    · rw [if_neg hm, List.length_append, List.length_cons]
      rw [List.length_append] at hlen
      omega
  · intro t ht hu
    cases after_select_buf R st b1 s b2 m t ht with
    | inr h =>
      obtain ⟨e, hne⟩ := h
      rw [e] at hu
      have hu' : s.cur - m = s.orig := hu
      omega
    | inl ht' =>
      have htb := hsub t ht'
      have hw := hok.wait t htb hu
      have ht1 := (hok.spans t htb).1
      have har := hok.arows_row t.sid ht1
      rw [hcnt]
      have hc' := cntL_le_length t.sid (b1 ++ b2)
      rw [hb, cntL_select] at hw
      -- a forced row start selects a span counted for `t`
      have hf : st.rem = R → A < st.row - arow st t.sid → s.sid ≤ t.sid ∧ s.cur = s.orig := by
        intro hqR hover
        obtain ⟨u, hu1⟩ := first_unstarted_exists st.buf t htb hu
        obtain ⟨hu2, hu3⟩ := first_unstarted_in st.buf u hu1
        have hmin := first_unstarted_min st.buf u t hok.incr hu1 htb hu
        have hau : arow st u.sid ≤ arow st t.sid := hok.arows_mono u.sid t.sid hmin ht1
        have hsu : s = u := hforced u ⟨hqR, hu1, by omega⟩
        rw [hsu]
        exact ⟨hmin, hu3⟩
      unfold doneRows lateFlag at hw ⊢
      rw [harow, hrow, hremv]
      rw [hlen] at hsize
      by_cases hc : s.sid ≤ t.sid ∧ s.cur = s.orig
      · rw [if_pos hc] at hw
        by_cases hq : st.rem - m = 0
        · rw [if_pos hq, if_pos hq, if_pos rfl]
          by_cases hR : st.rem = R
          · rw [if_pos hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
            · rw [if_neg h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
          · rw [if_neg hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
            · rw [if_neg h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
        · rw [if_neg hq, if_neg hq]
          rw [if_neg (by omega : ¬ (st.rem - m = R))]
          by_cases hR : st.rem = R
          · rw [if_pos hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw ⊢
              omega
            · rw [if_neg h2] at hw ⊢
              omega
          · rw [if_neg hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw ⊢
              omega
            · rw [if_neg h2] at hw ⊢
              omega
      · rw [if_neg hc] at hw
        by_cases hq : st.rem - m = 0
        · rw [if_pos hq, if_pos hq, if_pos rfl]
          by_cases hR : st.rem = R
          · rw [if_pos hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              by_cases hov : A < st.row - arow st t.sid
              · exact absurd (hf hR hov) hc
              · omega
            · rw [if_neg h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
          · rw [if_neg hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
            · rw [if_neg h2] at hw
              rw [if_pos (by omega : arow st t.sid < st.row + 1)]
              omega
        · rw [if_neg hq, if_neg hq]
          rw [if_neg (by omega : ¬ (st.rem - m = R))]
          by_cases hR : st.rem = R
          · rw [if_pos hR] at hw
            by_cases hov : A < st.row - arow st t.sid
            · exact absurd (hf hR hov) hc
            · by_cases h2 : arow st t.sid < st.row
              · rw [if_pos h2] at hw ⊢
                omega
              · rw [if_neg h2] at hw ⊢
                omega
          · rw [if_neg hR] at hw
            by_cases h2 : arow st t.sid < st.row
            · rw [if_pos h2] at hw ⊢
              omega
            · rw [if_neg h2] at hw ⊢
              omega
  · intro i r hin
    have hin' : (i, r) ∈ (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts) :=
      hin
    rw [harow]
    by_cases hu : s.cur = s.orig
    · rw [if_pos hu] at hin'
      rw [List.mem_cons] at hin'
      cases hin' with
      | inl e =>
        have e1 : i = s.sid := congrArg Prod.fst e
        have e2 : r = st.row := congrArg Prod.snd e
        rw [e1, e2]
        exact ⟨hs1, wait_bound_of R B A bmax len st s hok hs hu⟩
      | inr hin' => exact hok.starts_ok i r hin'
    · rw [if_neg hu] at hin'
      exact hok.starts_ok i r hin'
  · intro i hi hns
    have hns' : i ∉ st.starts.map Prod.fst := by
      intro h
      apply hns
      show i ∈ (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts).map Prod.fst
      by_cases hu : s.cur = s.orig
      · rw [if_pos hu]
        exact List.Mem.tail _ h
      · rw [if_neg hu]
        exact h
    obtain ⟨t, ht1, ht2, ht3⟩ := hok.unstarted i hi hns'
    refine ⟨t, ?_, ht2, ht3⟩
    show t ∈ (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2)
    rw [hb, List.mem_append] at ht1
    cases ht1 with
    | inl ht1 =>
      by_cases hm : m = s.cur
      · rw [if_pos hm]
        exact List.mem_append.mpr (Or.inl ht1)
      · rw [if_neg hm]
        exact List.mem_append.mpr (Or.inl ht1)
    | inr ht1 =>
      rw [List.mem_cons] at ht1
      cases ht1 with
      | inl e =>
        exfalso
        apply hns
        show i ∈ (if s.cur = s.orig then (s.sid, st.row) :: st.starts else st.starts).map Prod.fst
        have hu : s.cur = s.orig := by rw [← e]; exact ht3
        rw [if_pos hu, ← ht2, e]
        exact List.Mem.head _
      | inr ht1 =>
        by_cases hm : m = s.cur
        · rw [if_pos hm]
          exact List.mem_append.mpr (Or.inr ht1)
        · rw [if_neg hm]
          exact List.mem_append.mpr (Or.inr (List.Mem.tail _ ht1))
  · have hmass := hok.mass_ok
    rw [hb, mass_select] at hmass
    show sumLen len (seqN 0 st.narr) = st.emitted + m +
      mass (if m = s.cur then b1 ++ b2 else b1 ++ Span.mk s.sid s.orig (s.cur - m) :: b2)
    by_cases hm : m = s.cur
    · rw [if_pos hm]
      omega
    · rw [if_neg hm, mass_select]
      show sumLen len (seqN 0 st.narr) = st.emitted + m + (mass (b1 ++ b2) + (s.cur - m))
      omega
  · have hrows := hok.rows_ok
    show st.emitted + m = (if st.rem - m = 0 then st.row + 1 else st.row) * R +
      (R - (if st.rem - m = 0 then R else st.rem - m))
    by_cases hq : st.rem - m = 0
    · rw [if_pos hq, if_pos hq, Nat.add_mul, Nat.one_mul]
      omega
    · rw [if_neg hq, if_neg hq]
      omega

theorem wok_step (hB : 1 ≤ B) (st st' : WState) (hok : WOk R B A bmax len st)
    (hs : WStep R B A bmax len st st') : WOk R B A bmax len st' := by
  cases hs with
  | arrive _ k hl hk1 hk2 hp => exact wok_arrive R B A bmax len st k hok hl hk1 hk2 hp
  | select _ b1 s b2 m hb h1 h2 h3 hf => exact wok_select R B A bmax len hB st b1 s b2 m hok hb h1 h2 h3 hf

/-! ## Main theorems -/

/-- The invariant holds in every reachable state. -/
theorem bw_invariant (hR : 0 < R) (hB : 1 ≤ B) (st : WState) (h : WReachable R B A bmax len st) :
    WOk R B A bmax len st := by
  induction h with
  | init => exact wok_init R B A bmax len hR
  | step _ hs ih => exact wok_step R B A bmax len hB _ _ ih hs

/-- Every started occurrence started at most `bwBound` rows after its arrival row. -/
theorem bw_start_bound (hR : 0 < R) (hB : 1 ≤ B) (st : WState) (i r : Nat)
    (h : WReachable R B A bmax len st) (hin : (i, r) ∈ st.starts) :
    r ≤ arow st i + bwBound B A bmax :=
  ((bw_invariant R B A bmax len hR hB st h).starts_ok i r hin).2

/-- Every arrived occurrence that has not started is buffered whole and at most
`bwBound` rows past its arrival row. -/
theorem bw_unstarted_bound (hR : 0 < R) (hB : 1 ≤ B) (st : WState) (i : Nat)
    (h : WReachable R B A bmax len st) (hi : i < st.narr) (hns : i ∉ st.starts.map Prod.fst) :
    (⟨i, len i, len i⟩ : Span) ∈ st.buf ∧ st.row ≤ arow st i + bwBound B A bmax := by
  have hok := bw_invariant R B A bmax len hR hB st h
  obtain ⟨s, hs1, hs2, hs3⟩ := hok.unstarted i hi hns
  obtain ⟨_, ho, _, _⟩ := hok.spans s hs1
  refine ⟨?_, ?_⟩
  · have e : s = ⟨i, len i, len i⟩ := by
      cases s with
      | mk si so sc =>
        have e1 : si = i := hs2
        have e2 : sc = so := hs3
        have e3 : so = len si := ho
        rw [e2, e3, e1]
    rw [← e]
    exact hs1
  · rw [← hs2]
    exact wait_bound_of R B A bmax len st s hok hs1 hs3

/-- No token is discarded: arrived tokens = emitted + buffered. -/
theorem bw_conservation (hR : 0 < R) (hB : 1 ≤ B) (st : WState) (h : WReachable R B A bmax len st) :
    sumLen len (seqN 0 st.narr) = st.emitted + mass st.buf :=
  (bw_invariant R B A bmax len hR hB st h).mass_ok

/-- Rows are full: `emitted = row * R + (R - rem)` with `0 < rem ≤ R`. -/
theorem bw_rows_full (hR : 0 < R) (hB : 1 ≤ B) (st : WState) (h : WReachable R B A bmax len st) :
    st.emitted = st.row * R + (R - st.rem) ∧ 0 < st.rem ∧ st.rem ≤ R := by
  have hok := bw_invariant R B A bmax len hR hB st h
  exact ⟨hok.rows_ok, hok.rem_pos, hok.rem_le⟩

/-- The arrival row of an occurrence is fixed once it has arrived. -/
theorem bw_arows_prefix (st st' : WState) (hs : WStep R B A bmax len st st') :
    ∃ l, st'.arows = st.arows ++ l := by
  cases hs with
  | arrive _ k _ _ _ _ => exact ⟨repeatN st.row k, rfl⟩
  | select _ b1 s b2 m _ _ _ _ _ => exact ⟨[], (List.append_nil _).symm⟩

end

end PackingTheory
