import PackingTheory.Defs

/-!
# BestFitPad: a loader that pads instead of cropping starves once its buffer holds only long spans

Mirror of `proofs/coq/BestFitPad.v` (core Lean 4 only; like the rest of the
Lean mirror it has not been machine-checked here: no Lean toolchain can be
installed on the machines this project is built on).

`PStep` is the permissive relation of the `bestfit-pad` policy (nanochat's SFT
loader): batches of `1 ≤ k ≤ bmax` arrivals only while fewer than `B` spans are
buffered; a placement of any buffered span that fits the rest of the row (the
row is complete when full); a padding step, with at least `B` spans buffered
and none fitting, that completes the row. A padding step at an empty row is an
all-padding row; the first one is `starved`. In every reachable state with a
first all-padding row `s` (`bfp_starvation`):

* the placed occurrences are exactly the short arrivals, every buffered span is
  long, and `longCount lastn < B ≤ longCount narr` (or no arrival at all);
* `M ≤ s * R`, `s ≤ P`, and `s = 0 ∨ (s - 1) * (R + 1) < 2 * M` for the placed
  tokens `M` and documents `P`;
* `bfp_starved_absorbing`: afterwards only the row index changes.

Differences in form (not in meaning) from the Coq file: the invariant record
`pok` is the structure `POk`, `healthy` and `starved_at` are predicates
`Healthy` and `StarvedAt`, `first_empty` is `firstEmpty`; the permutation
argument of `bfp_placed_tokens` is `sumLen_same_members` (duplicate-free lists
with the same members have the same token sum), proved with `eraseL`.
-/

namespace PackingTheory

structure PState where
  narr : Nat
  lastn : Nat
  buf : Buffer
  row : Nat
  fill : Nat
  placed : List Nat
  doneTok : Nat
  last : Nat
  starved : Option Nat

def shortb (R : Nat) (len : Nat → Nat) (j : Nat) : Bool := decide (len j ≤ R)

/-- The short occurrences among the first `n` arrivals (Coq `shorts`). -/
def shorts (R : Nat) (len : Nat → Nat) (n : Nat) : List Nat := filt (shortb R len) (seqN 0 n)

/-- A batch of `k` new occurrences `n .. n+k-1`, unchanged (Coq `pfresh`). -/
def pfresh (len : Nat → Nat) : Nat → Nat → Buffer
  | _, 0 => []
  | n, k + 1 => ⟨n, len n, len n⟩ :: pfresh len (n + 1) k

def pinit : PState := ⟨0, 0, [], 0, 0, [], 0, 0, none⟩

def firstEmpty (st : PState) : Option Nat :=
  match st.starved with
  | some s => some s
  | none => if st.fill = 0 then some st.row else none

inductive PStep (R B bmax : Nat) (len : Nat → Nat) : PState → PState → Prop
  | arrive (st : PState) (k : Nat) :
      st.buf.length < B → 1 ≤ k → k ≤ bmax →
      (∀ j, st.narr ≤ j → j < st.narr + k → 0 < len j) →
      PStep R B bmax len st
        ⟨st.narr + k, st.narr, st.buf ++ pfresh len st.narr k, st.row, st.fill, st.placed, st.doneTok,
         st.last, st.starved⟩
  | placeFull (st : PState) (b1 : Buffer) (s : Span) (b2 : Buffer) :
      st.buf = b1 ++ s :: b2 → st.fill + s.cur = R →
      PStep R B bmax len st
        ⟨st.narr, st.lastn, b1 ++ b2, st.row + 1, 0, s.sid :: st.placed, st.doneTok + R, R, st.starved⟩
  | place (st : PState) (b1 : Buffer) (s : Span) (b2 : Buffer) :
      st.buf = b1 ++ s :: b2 → st.fill + s.cur < R →
      PStep R B bmax len st
        ⟨st.narr, st.lastn, b1 ++ b2, st.row, st.fill + s.cur, s.sid :: st.placed, st.doneTok, st.last,
         st.starved⟩
  | pad (st : PState) :
      B ≤ st.buf.length → (∀ s, s ∈ st.buf → R < st.fill + s.cur) →
      PStep R B bmax len st
        ⟨st.narr, st.lastn, st.buf, st.row + 1, 0, st.placed, st.doneTok + st.fill, st.fill, firstEmpty st⟩

inductive PReach (R B bmax : Nat) (len : Nat → Nat) : PState → Prop
  | init : PReach R B bmax len pinit
  | step {st st' : PState} : PReach R B bmax len st → PStep R B bmax len st st' → PReach R B bmax len st'

def inBuf (j : Nat) (b : Buffer) : Prop := ∃ s, s ∈ b ∧ s.sid = j

/-- Before the first all-padding row (Coq `healthy`). -/
def Healthy (R B : Nat) (st : PState) : Prop :=
  st.row + (if st.fill = 0 then 0 else 1) ≤ st.placed.length ∧
  (∀ r, st.row = r + 1 → r * (R + 1) + st.last ≤ 2 * st.doneTok) ∧
  (1 ≤ st.row → 0 < st.fill → R + 1 ≤ st.last + st.fill) ∧
  (1 ≤ st.row → st.fill = 0 →
     st.last = R ∨ (B ≤ st.buf.length ∧ ∀ s, s ∈ st.buf → R < st.last + s.cur)) ∧
  (1 ≤ st.row → 1 ≤ st.last)

/-- From the first all-padding row `s` on (Coq `starved_at`). -/
def StarvedAt (R B : Nat) (len : Nat → Nat) (st : PState) (s : Nat) : Prop :=
  st.fill = 0 ∧ B ≤ st.buf.length ∧ (∀ t, t ∈ st.buf → R < t.cur) ∧
  s ≤ st.placed.length ∧ sumLen len st.placed ≤ s * R ∧
  (s = 0 ∨ (s - 1) * (R + 1) < 2 * sumLen len st.placed)

structure POk (R B bmax : Nat) (len : Nat → Nat) (st : PState) : Prop where
  fill_le : st.fill ≤ R
  spans : ∀ s, s ∈ st.buf → s.orig = len s.sid ∧ s.cur = len s.sid ∧ s.sid < st.narr ∧ 0 < len s.sid
  incr : incrIds st.buf
  placed_ok : ∀ j, j ∈ st.placed → j < st.narr ∧ len j ≤ R
  nodup : NoDupL st.placed
  cover : ∀ j, j < st.narr → j ∈ st.placed ∨ inBuf j st.buf
  disjoint : ∀ j, j ∈ st.placed → ¬ inBuf j st.buf
  batch : st.lastn ≤ st.narr ∧ st.narr ≤ st.lastn + bmax
  lastn_ok : st.narr = 0 ∨ longCount R len st.lastn < B
  sum_ok : st.doneTok + st.fill = sumLen len st.placed
  done_ok : st.doneTok ≤ st.row * R
  healthy : st.starved = none → Healthy R B st
  starvedAt : ∀ s, st.starved = some s → StarvedAt R B len st s

/-! ## Toolkit -/

theorem mem_pfresh (len : Nat → Nat) (k n : Nat) (s : Span) (h : s ∈ pfresh len n k) :
    n ≤ s.sid ∧ s.sid < n + k ∧ s = ⟨s.sid, len s.sid, len s.sid⟩ := by
  induction k generalizing n with
  | zero => cases h
  | succ k ih =>
    simp only [pfresh, List.mem_cons] at h
    cases h with
    | inl h => subst h; exact ⟨Nat.le_refl _, by simp; omega, rfl⟩
    | inr h =>
      obtain ⟨h1, h2, h3⟩ := ih (n + 1) h
      exact ⟨by omega, by omega, h3⟩

theorem sid_mem_pfresh (len : Nat → Nat) (k n j : Nat) (h1 : n ≤ j) (h2 : j < n + k) :
    (⟨j, len j, len j⟩ : Span) ∈ pfresh len n k := by
  induction k generalizing n with
  | zero => omega
  | succ k ih =>
    simp only [pfresh, List.mem_cons]
    by_cases hj : j = n
    · subst hj; exact Or.inl rfl
    · exact Or.inr (ih (n + 1) (by omega) (by omega))

theorem incr_ids_pfresh (len : Nat → Nat) (k n : Nat) : incrIds (pfresh len n k) := by
  induction k generalizing n with
  | zero => exact trivial
  | succ k ih =>
    refine ⟨?_, ih (n + 1)⟩
    intro u hu
    have := (mem_pfresh len k (n + 1) u hu).1
    simp
    omega

theorem incr_ids_remove (b1 : Buffer) (s : Span) (b2 : Buffer) (h : incrIds (b1 ++ s :: b2)) :
    incrIds (b1 ++ b2) := by
  rw [incr_ids_app] at h
  obtain ⟨h1, ⟨_, h2⟩, h3⟩ := h
  rw [incr_ids_app]
  exact ⟨h1, h2, fun x y hx hy => h3 x y hx (List.Mem.tail _ hy)⟩

theorem mem_of_mem_eraseL (x y : Nat) (l : List Nat) (h : y ∈ eraseL x l) : y ∈ l := by
  induction l with
  | nil => cases h
  | cons z t ih =>
    simp only [eraseL] at h
    by_cases hz : z = x
    · rw [if_pos hz] at h; exact List.Mem.tail _ h
    · rw [if_neg hz, List.mem_cons] at h
      cases h with
      | inl h => rw [h]; exact List.Mem.head _
      | inr h => exact List.Mem.tail _ (ih h)

theorem not_mem_eraseL (x : Nat) (l : List Nat) (h : NoDupL l) : x ∉ eraseL x l := by
  induction h with
  | nil => intro hx; cases hx
  | @cons z t hz _ ih =>
    simp only [eraseL]
    by_cases e : z = x
    · rw [if_pos e]; rw [← e]; exact hz
    · rw [if_neg e, List.mem_cons]
      intro hx
      cases hx with
      | inl hx => exact e hx.symm
      | inr hx => exact ih hx

theorem nodup_eraseL (x : Nat) (l : List Nat) (h : NoDupL l) : NoDupL (eraseL x l) := by
  induction h with
  | nil => exact NoDupL.nil
  | @cons z t hz ht ih =>
    simp only [eraseL]
    by_cases e : z = x
    · rw [if_pos e]; exact ht
    · rw [if_neg e]
      exact NoDupL.cons (fun hm => hz (mem_of_mem_eraseL x z t hm)) ih

theorem sumLen_eraseL (len : Nat → Nat) (x : Nat) (l : List Nat) (h : x ∈ l) :
    sumLen len l = len x + sumLen len (eraseL x l) := by
  induction l with
  | nil => cases h
  | cons z t ih =>
    simp only [eraseL, sumLen]
    by_cases e : z = x
    · rw [if_pos e, e]
    · rw [if_neg e, sumLen]
      rw [List.mem_cons] at h
      cases h with
      | inl h => exact absurd h.symm e
      | inr h => rw [ih h]; omega

/-- Duplicate-free lists with the same members have the same token sum (Coq: a permutation). -/
theorem sumLen_same_members (len : Nat → Nat) (l : List Nat) (hl : NoDupL l) :
    ∀ l', NoDupL l' → (∀ x, x ∈ l ↔ x ∈ l') → sumLen len l = sumLen len l' := by
  induction hl with
  | nil =>
    intro l' _ hm
    cases l' with
    | nil => rfl
    | cons y t => exact absurd ((hm y).2 (List.Mem.head _)) (by intro h; cases h)
  | @cons x t hx _ ih =>
    intro l' hl' hm
    have hxl : x ∈ l' := (hm x).1 (List.Mem.head _)
    rw [sumLen, sumLen_eraseL len x l' hxl]
    have : sumLen len t = sumLen len (eraseL x l') := by
      apply ih (eraseL x l') (nodup_eraseL x l' hl')
      intro y
      constructor
      · intro hy
        have hne : y ≠ x := fun e => hx (e ▸ hy)
        exact mem_eraseL x y l' ((hm y).1 (List.Mem.tail _ hy)) hne
      · intro hy
        have hne : y ≠ x := fun e => not_mem_eraseL x l' hl' (e ▸ hy)
        have := (hm y).2 (mem_of_mem_eraseL x y l' hy)
        rw [List.mem_cons] at this
        cases this with
        | inl h => exact absurd h hne
        | inr h => exact h
    rw [this]

/-! ## Counting the buffer -/

theorem long_count_le_buf (R B bmax : Nat) (len : Nat → Nat) (st : PState) (n : Nat)
    (hok : POk R B bmax len st) (hn : n ≤ st.narr) : longCount R len n ≤ st.buf.length := by
  unfold longCount
  rw [← length_ids]
  apply nodup_incl_length _ (nodup_filt _ _ (nodup_seqN 0 n))
  intro j hj
  obtain ⟨hj, hl⟩ := (mem_filt _ _ j).1 hj
  have hj' := (mem_seqN 0 n j).1 hj
  simp only [longb, decide_eq_true_eq] at hl
  cases hok.cover j (by omega) with
  | inl hp => have := (hok.placed_ok j hp).2; omega
  | inr hb => exact (mem_ids st.buf j).2 hb

theorem buf_le_long_count (R B bmax : Nat) (len : Nat → Nat) (st : PState) (hok : POk R B bmax len st)
    (hlong : ∀ t, t ∈ st.buf → R < t.cur) : st.buf.length ≤ longCount R len st.narr := by
  unfold longCount
  rw [← length_ids]
  apply nodup_incl_length _ (incr_ids_NoDup _ hok.incr)
  intro j hj
  obtain ⟨s, hs, rfl⟩ := (mem_ids st.buf j).1 hj
  obtain ⟨_, hc, hn, _⟩ := hok.spans s hs
  apply (mem_filt _ _ s.sid).2
  refine ⟨(mem_seqN 0 st.narr s.sid).2 ⟨Nat.zero_le _, by omega⟩, ?_⟩
  simp only [longb, decide_eq_true_eq]
  have := hlong s hs
  omega

/-! ## The invariant -/

theorem pok_init (R B bmax : Nat) (len : Nat → Nat) : POk R B bmax len pinit where
  fill_le := Nat.zero_le _
  spans := fun _ h => by cases h
  incr := trivial
  placed_ok := fun _ h => by cases h
  nodup := NoDupL.nil
  cover := fun _ h => by simp [pinit] at h
  disjoint := fun _ h => by cases h
  batch := ⟨Nat.le_refl _, Nat.zero_le _⟩
  lastn_ok := Or.inl rfl
  sum_ok := rfl
  done_ok := Nat.zero_le _
  healthy := fun _ => by
    refine ⟨by simp [pinit], fun r h => by simp [pinit] at h, fun h => by simp [pinit] at h,
      fun h => by simp [pinit] at h, fun h => by simp [pinit] at h⟩
  starvedAt := fun _ h => by simp [pinit] at h

theorem bfp_invariant (R B bmax : Nat) (len : Nat → Nat) (st : PState) (h : PReach R B bmax len st) :
    POk R B bmax len st := by
  induction h with
  | init => exact pok_init R B bmax len
  | @step st st' _ hs ih =>
    cases hs with
    | arrive _ k hlen hk1 hk2 hpos =>
      have hlc := long_count_le_buf R B bmax len st st.narr ih (Nat.le_refl _)
      exact {
        fill_le := ih.fill_le
        spans := fun s hs => by
          rcases List.mem_append.1 hs with hs | hs
          · obtain ⟨a, b, c, d⟩ := ih.spans s hs; exact ⟨a, b, by omega, d⟩
          · obtain ⟨h1, h2, h3⟩ := mem_pfresh len k st.narr s hs
            rw [h3]; exact ⟨rfl, rfl, h2, hpos s.sid h1 h2⟩
        incr := by
          rw [incr_ids_app]
          refine ⟨ih.incr, incr_ids_pfresh len k st.narr, fun x y hx hy => ?_⟩
          have := (ih.spans x hx).2.2.1
          have := (mem_pfresh len k st.narr y hy).1
          omega
        placed_ok := fun j hj => by
          obtain ⟨a, b⟩ := ih.placed_ok j hj; exact ⟨by omega, b⟩
        nodup := ih.nodup
        cover := fun j hj => by
          by_cases hlt : j < st.narr
          · rcases ih.cover j hlt with hp | ⟨s, hs, hsid⟩
            · exact Or.inl hp
            · exact Or.inr ⟨s, List.mem_append.2 (Or.inl hs), hsid⟩
          · exact Or.inr ⟨⟨j, len j, len j⟩,
              List.mem_append.2 (Or.inr (sid_mem_pfresh len k st.narr j (by omega) hj)), rfl⟩
        disjoint := fun j hj ⟨s, hs, hsid⟩ => by
          rcases List.mem_append.1 hs with hs | hs
          · exact ih.disjoint j hj ⟨s, hs, hsid⟩
          · have := (mem_pfresh len k st.narr s hs).1
            have := (ih.placed_ok j hj).1
            omega
        batch := ⟨by omega, by omega⟩
        lastn_ok := Or.inr (by omega)
        sum_ok := ih.sum_ok
        done_ok := ih.done_ok
        healthy := fun hn => by
          obtain ⟨h1, h2, h3, h4, h5⟩ := ih.healthy hn
          refine ⟨h1, h2, h3, fun hr hf => ?_, h5⟩
          rcases h4 hr hf with hR | ⟨hB, _⟩
          · exact Or.inl hR
          · omega
        starvedAt := fun s hs => by
          have := (ih.starvedAt s hs).2.1
          omega }
    | placeFull _ b1 s b2 hb hfit =>
      exact place_full_ok R B bmax len st b1 s b2 ih hb hfit
    | place _ b1 s b2 hb hfit =>
      exact place_ok R B bmax len st b1 s b2 ih hb hfit
    | pad _ hB hnone =>
      exact pad_ok R B bmax len st ih hB hnone
where
  place_common (R B bmax : Nat) (len : Nat → Nat) (st : PState) (b1 : Buffer) (s : Span)
      (b2 : Buffer) (ih : POk R B bmax len st) (hb : st.buf = b1 ++ s :: b2) (hfit : st.fill + s.cur ≤ R) :
      s ∈ st.buf ∧ len s.sid = s.cur ∧ 0 < s.cur ∧ incrIds (b1 ++ b2) ∧
      (∀ t, t ∈ b1 ++ b2 → t ∈ st.buf) ∧ ¬ inBuf s.sid (b1 ++ b2) := by
    have hin : s ∈ st.buf := by rw [hb]; exact List.mem_append.2 (Or.inr (List.Mem.head _))
    obtain ⟨_, hc, _, hp⟩ := ih.spans s hin
    have hi := ih.incr
    rw [hb] at hi
    have hsub : ∀ t, t ∈ b1 ++ b2 → t ∈ st.buf := fun t ht => by
      rw [hb]
      rcases List.mem_append.1 ht with ht | ht
      · exact List.mem_append.2 (Or.inl ht)
      · exact List.mem_append.2 (Or.inr (List.Mem.tail _ ht))
    refine ⟨hin, hc.symm, by omega, incr_ids_remove b1 s b2 hi, hsub, ?_⟩
    intro ⟨t, ht, hsid⟩
    have ht' : t ∈ b1 ++ s :: b2 := by
      rcases List.mem_append.1 ht with ht | ht
      · exact List.mem_append.2 (Or.inl ht)
      · exact List.mem_append.2 (Or.inr (List.Mem.tail _ ht))
    have hs' : s ∈ b1 ++ s :: b2 := List.mem_append.2 (Or.inr (List.Mem.head _))
    have heq := incr_ids_unique _ t s hi ht' hs' hsid
    subst heq
    rw [incr_ids_app] at hi
    obtain ⟨_, ⟨hs2, _⟩, hx⟩ := hi
    rcases List.mem_append.1 ht with ht | ht
    · have := hx t t ht (List.Mem.head _); omega
    · have := hs2 t ht; omega
  place_full_ok (R B bmax : Nat) (len : Nat → Nat) (st : PState) (b1 : Buffer) (s : Span)
      (b2 : Buffer) (ih : POk R B bmax len st) (hb : st.buf = b1 ++ s :: b2) (hfit : st.fill + s.cur = R) :
      POk R B bmax len ⟨st.narr, st.lastn, b1 ++ b2, st.row + 1, 0, s.sid :: st.placed, st.doneTok + R, R,
        st.starved⟩ := by
    obtain ⟨hin, hc, hpos, hinc, hsub, hnot⟩ := place_common R B bmax len st b1 s b2 ih hb (by omega)
    exact place_lists_full R B bmax len st b1 s b2 ih hb hfit hin hc hpos hinc hsub hnot
  place_lists_full (R B bmax : Nat) (len : Nat → Nat) (st : PState) (b1 : Buffer) (s : Span)
      (b2 : Buffer) (ih : POk R B bmax len st) (hb : st.buf = b1 ++ s :: b2) (hfit : st.fill + s.cur = R)
      (hin : s ∈ st.buf) (hc : len s.sid = s.cur) (hpos : 0 < s.cur) (hinc : incrIds (b1 ++ b2))
      (hsub : ∀ t, t ∈ b1 ++ b2 → t ∈ st.buf) (hnot : ¬ inBuf s.sid (b1 ++ b2)) :
      POk R B bmax len ⟨st.narr, st.lastn, b1 ++ b2, st.row + 1, 0, s.sid :: st.placed, st.doneTok + R, R,
        st.starved⟩ where
    fill_le := Nat.zero_le _
    spans := fun t ht => ih.spans t (hsub t ht)
    incr := hinc
    placed_ok := fun j hj => by
      rcases List.mem_cons.1 hj with rfl | hj
      · exact ⟨(ih.spans s hin).2.2.1, by omega⟩
      · exact ih.placed_ok j hj
    nodup := NoDupL.cons (fun hm => ih.disjoint s.sid hm ⟨s, hin, rfl⟩) ih.nodup
    cover := fun j hj => by
      rcases ih.cover j hj with hp | ⟨t, ht, hsid⟩
      · exact Or.inl (List.Mem.tail _ hp)
      · rw [hb] at ht
        rcases List.mem_append.1 ht with ht | ht
        · exact Or.inr ⟨t, List.mem_append.2 (Or.inl ht), hsid⟩
        · rcases List.mem_cons.1 ht with rfl | ht
          · exact Or.inl (hsid ▸ List.Mem.head _)
          · exact Or.inr ⟨t, List.mem_append.2 (Or.inr ht), hsid⟩
    disjoint := fun j hj hbj => by
      rcases List.mem_cons.1 hj with rfl | hj
      · exact hnot hbj
      · obtain ⟨t, ht, hsid⟩ := hbj; exact ih.disjoint j hj ⟨t, hsub t ht, hsid⟩
    batch := ih.batch
    lastn_ok := ih.lastn_ok
    sum_ok := by have := ih.sum_ok; simp only [sumLen]; omega
    done_ok := by have := ih.done_ok; rw [Nat.succ_mul]; omega
    healthy := fun hn => by
      obtain ⟨h1, h2, h3, h4, h5⟩ := ih.healthy hn
      refine ⟨?_, fun r hr => ?_, fun _ h0 => by simp at h0, fun _ _ => Or.inl rfl, fun _ => by omega⟩
      · simp only [List.length_cons]; split at h1 <;> simp <;> omega
      · simp only [Nat.add_right_cancel_iff] at hr
        subst hr
        cases hrow : st.row with
        | zero => omega
        | succ r' =>
          have := h2 r' hrow
          have := h5 (by omega)
          rw [Nat.succ_mul]
          omega
    starvedAt := fun x hx => by
      have := (ih.starvedAt x hx).2.2.1 s hin
      have := (ih.starvedAt x hx).1
      omega
  place_ok (R B bmax : Nat) (len : Nat → Nat) (st : PState) (b1 : Buffer) (s : Span)
      (b2 : Buffer) (ih : POk R B bmax len st) (hb : st.buf = b1 ++ s :: b2) (hfit : st.fill + s.cur < R) :
      POk R B bmax len ⟨st.narr, st.lastn, b1 ++ b2, st.row, st.fill + s.cur, s.sid :: st.placed, st.doneTok,
        st.last, st.starved⟩ := by
    obtain ⟨hin, hc, hpos, hinc, hsub, hnot⟩ := place_common R B bmax len st b1 s b2 ih hb (by omega)
    exact {
      fill_le := by omega
      spans := fun t ht => ih.spans t (hsub t ht)
      incr := hinc
      placed_ok := fun j hj => by
        rcases List.mem_cons.1 hj with rfl | hj
        · exact ⟨(ih.spans s hin).2.2.1, by omega⟩
        · exact ih.placed_ok j hj
      nodup := NoDupL.cons (fun hm => ih.disjoint s.sid hm ⟨s, hin, rfl⟩) ih.nodup
      cover := fun j hj => by
        rcases ih.cover j hj with hp | ⟨t, ht, hsid⟩
        · exact Or.inl (List.Mem.tail _ hp)
        · rw [hb] at ht
          rcases List.mem_append.1 ht with ht | ht
          · exact Or.inr ⟨t, List.mem_append.2 (Or.inl ht), hsid⟩
          · rcases List.mem_cons.1 ht with rfl | ht
            · exact Or.inl (hsid ▸ List.Mem.head _)
            · exact Or.inr ⟨t, List.mem_append.2 (Or.inr ht), hsid⟩
      disjoint := fun j hj hbj => by
        rcases List.mem_cons.1 hj with rfl | hj
        · exact hnot hbj
        · obtain ⟨t, ht, hsid⟩ := hbj; exact ih.disjoint j hj ⟨t, hsub t ht, hsid⟩
      batch := ih.batch
      lastn_ok := ih.lastn_ok
      sum_ok := by have := ih.sum_ok; simp only [sumLen]; omega
      done_ok := ih.done_ok
      healthy := fun hn => by
        obtain ⟨h1, h2, h3, h4, h5⟩ := ih.healthy hn
        refine ⟨?_, h2, fun hr _ => ?_, fun _ h0 => by omega, h5⟩
        · have : (if st.fill + s.cur = 0 then 0 else 1) = 1 := by simp; omega
          simp only [List.length_cons, this]
          split at h1 <;> omega
        · by_cases hf : st.fill = 0
          · rcases h4 hr hf with hR | ⟨_, hall⟩
            · omega
            · have := hall s hin; omega
          · have := h3 hr (by omega); omega
      starvedAt := fun x hx => by
        have := (ih.starvedAt x hx).2.2.1 s hin
        have := (ih.starvedAt x hx).1
        omega }
  pad_ok (R B bmax : Nat) (len : Nat → Nat) (st : PState) (ih : POk R B bmax len st)
      (hB : B ≤ st.buf.length) (hnone : ∀ s, s ∈ st.buf → R < st.fill + s.cur) :
      POk R B bmax len ⟨st.narr, st.lastn, st.buf, st.row + 1, 0, st.placed, st.doneTok + st.fill, st.fill,
        firstEmpty st⟩ where
    fill_le := Nat.zero_le _
    spans := ih.spans
    incr := ih.incr
    placed_ok := ih.placed_ok
    nodup := ih.nodup
    cover := ih.cover
    disjoint := ih.disjoint
    batch := ih.batch
    lastn_ok := ih.lastn_ok
    sum_ok := by have := ih.sum_ok; omega
    done_ok := by have := ih.done_ok; have := ih.fill_le; rw [Nat.succ_mul]; omega
    healthy := fun hn => by
      unfold firstEmpty at hn
      cases hs : st.starved with
      | some x => rw [hs] at hn; simp at hn
      | none =>
        rw [hs] at hn
        by_cases hf : st.fill = 0
        · simp [hf] at hn
        · obtain ⟨h1, h2, h3, h4, h5⟩ := ih.healthy hs
          refine ⟨?_, fun r hr => ?_, fun _ h0 => by simp at h0, fun _ _ => Or.inr ⟨hB, hnone⟩,
            fun _ => by omega⟩
          · simp only [if_pos rfl]; simp [hf] at h1; omega
          · simp only [Nat.add_right_cancel_iff] at hr
            subst hr
            cases hrow : st.row with
            | zero => omega
            | succ r' =>
              have := h2 r' hrow
              have := h3 (by omega) (by omega)
              rw [Nat.succ_mul]
              omega
    starvedAt := fun x hx => by
      unfold firstEmpty at hx
      cases hs : st.starved with
      | some y =>
        rw [hs] at hx
        simp at hx
        subst hx
        obtain ⟨hf, _, hl, hrest⟩ := ih.starvedAt y hs
        exact ⟨rfl, hB, hl, hrest⟩
      | none =>
        rw [hs] at hx
        by_cases hf : st.fill = 0
        · simp [hf] at hx
          subst hx
          obtain ⟨h1, h2, _, _, h5⟩ := ih.healthy hs
          have hsum := ih.sum_ok
          have hdone := ih.done_ok
          simp [hf] at h1
          refine ⟨rfl, hB, fun t ht => by have := hnone t ht; omega, h1, by omega, ?_⟩
          cases hrow : st.row with
          | zero => exact Or.inl rfl
          | succ r =>
            right
            have := h2 r hrow
            have := h5 (by omega)
            simp
            omega
        · simp [hf] at hx

/-! ## The starvation bound -/

theorem placed_are_shorts (R B bmax : Nat) (len : Nat → Nat) (st : PState) (hok : POk R B bmax len st)
    (hlong : ∀ t, t ∈ st.buf → R < t.cur) (j : Nat) : j ∈ st.placed ↔ j ∈ shorts R len st.narr := by
  unfold shorts
  rw [mem_filt, mem_seqN]
  simp only [shortb, decide_eq_true_eq]
  constructor
  · intro hj
    obtain ⟨a, b⟩ := hok.placed_ok j hj
    exact ⟨⟨Nat.zero_le _, by omega⟩, b⟩
  · intro ⟨⟨_, hj⟩, hs⟩
    rcases hok.cover j (by omega) with hp | ⟨t, ht, hsid⟩
    · exact hp
    · have := hlong t ht
      have := (hok.spans t ht).2.1
      subst hsid
      omega

theorem bfp_starvation (R B bmax : Nat) (len : Nat → Nat) (st : PState) (s : Nat)
    (hr : PReach R B bmax len st) (hs : st.starved = some s) :
    (∀ j, j ∈ st.placed ↔ j ∈ shorts R len st.narr) ∧ NoDupL st.placed ∧
    (∀ t, t ∈ st.buf → R < t.cur) ∧
    (st.narr = 0 ∨ longCount R len st.lastn < B) ∧ B ≤ longCount R len st.narr ∧
    (st.lastn ≤ st.narr ∧ st.narr ≤ st.lastn + bmax) ∧
    sumLen len st.placed ≤ s * R ∧ s ≤ st.placed.length ∧
    (s = 0 ∨ (s - 1) * (R + 1) < 2 * sumLen len st.placed) := by
  have hok := bfp_invariant R B bmax len st hr
  obtain ⟨_, hB, hlong, hP, hM, hup⟩ := hok.starvedAt s hs
  have := buf_le_long_count R B bmax len st hok hlong
  exact ⟨placed_are_shorts R B bmax len st hok hlong, hok.nodup, hlong, hok.lastn_ok, by omega, hok.batch,
    hM, hP, hup⟩

theorem bfp_placed_count (R B bmax : Nat) (len : Nat → Nat) (st : PState) (s : Nat)
    (hr : PReach R B bmax len st) (hs : st.starved = some s) :
    st.placed.length = (shorts R len st.narr).length := by
  obtain ⟨hiff, hnd, _⟩ := bfp_starvation R B bmax len st s hr hs
  have hs' : NoDupL (shorts R len st.narr) := nodup_filt _ _ (nodup_seqN 0 st.narr)
  have a := nodup_incl_length _ hnd _ (fun x hx => (hiff x).1 hx)
  have b := nodup_incl_length _ hs' _ (fun x hx => (hiff x).2 hx)
  omega

theorem bfp_placed_tokens (R B bmax : Nat) (len : Nat → Nat) (st : PState) (s : Nat)
    (hr : PReach R B bmax len st) (hs : st.starved = some s) :
    sumLen len st.placed = sumLen len (shorts R len st.narr) := by
  obtain ⟨hiff, hnd, _⟩ := bfp_starvation R B bmax len st s hr hs
  exact sumLen_same_members len _ hnd _ (nodup_filt _ _ (nodup_seqN 0 st.narr)) hiff

theorem bfp_starved_absorbing (R B bmax : Nat) (len : Nat → Nat) (st st' : PState) (s : Nat)
    (hr : PReach R B bmax len st) (hs : st.starved = some s) (hstep : PStep R B bmax len st st') :
    st'.buf = st.buf ∧ st'.placed = st.placed ∧ st'.narr = st.narr ∧ st'.fill = 0 ∧
    st'.row = st.row + 1 ∧ st'.starved = some s := by
  have hok := bfp_invariant R B bmax len st hr
  obtain ⟨hf, hB, hlong, _⟩ := hok.starvedAt s hs
  cases hstep with
  | arrive _ k hlen _ _ _ => omega
  | placeFull _ b1 t b2 hb hfit =>
    have := hlong t (by rw [hb]; exact List.mem_append.2 (Or.inr (List.Mem.head _)))
    omega
  | place _ b1 t b2 hb hfit =>
    have := hlong t (by rw [hb]; exact List.mem_append.2 (Or.inr (List.Mem.head _)))
    omega
  | pad _ _ _ => exact ⟨rfl, rfl, rfl, rfl, rfl, by simp [firstEmpty, hs]⟩

/-- Only a long span keeps an empty row from a placement. -/
theorem bfp_empty_row_all_long (R B : Nat) (st : PState) (_ : B ≤ st.buf.length) (hf : st.fill = 0)
    (h : ∀ s, s ∈ st.buf → R < st.fill + s.cur) : ∀ s, s ∈ st.buf → R < s.cur := by
  intro s hs
  have := h s hs
  omega

/-- The relation is not vacuous (Coq `bfp_starvation_example`): `R = 2`, `B = 1`, batches of one,
documents of 1 and 3 tokens; the first all-padding row is row 1. -/
theorem bfp_starvation_example :
    ∃ st, PReach 2 1 1 (fun j => if j = 0 then 1 else 3) st ∧ st.starved = some 1 := by
  let len : Nat → Nat := fun j => if j = 0 then 1 else 3
  have h1 : PStep 2 1 1 len pinit ⟨1, 0, pfresh len 0 1, 0, 0, [], 0, 0, none⟩ :=
    PStep.arrive pinit 1 (by decide) (by decide) (by decide) (fun j _ _ => by simp [len]; split <;> omega)
  have h2 : PStep 2 1 1 len ⟨1, 0, pfresh len 0 1, 0, 0, [], 0, 0, none⟩ ⟨1, 0, [], 0, 1, [0], 0, 0, none⟩ :=
    PStep.place _ [] ⟨0, 1, 1⟩ [] (by simp [pfresh, len]) (by decide)
  have h3 : PStep 2 1 1 len ⟨1, 0, [], 0, 1, [0], 0, 0, none⟩ ⟨2, 1, pfresh len 1 1, 0, 1, [0], 0, 0, none⟩ :=
    PStep.arrive _ 1 (by decide) (by decide) (by decide) (fun j _ _ => by simp [len]; split <;> omega)
  have h4 : PStep 2 1 1 len ⟨2, 1, pfresh len 1 1, 0, 1, [0], 0, 0, none⟩
      ⟨2, 1, pfresh len 1 1, 1, 0, [0], 1, 1, none⟩ :=
    PStep.pad _ (by simp [pfresh]) (fun t ht => by simp [pfresh, len] at ht; subst ht; decide)
  have h5 : PStep 2 1 1 len ⟨2, 1, pfresh len 1 1, 1, 0, [0], 1, 1, none⟩
      ⟨2, 1, pfresh len 1 1, 2, 0, [0], 1, 0, some 1⟩ :=
    PStep.pad _ (by simp [pfresh]) (fun t ht => by simp [pfresh, len] at ht; subst ht; decide)
  exact ⟨_, PReach.step (PReach.step (PReach.step (PReach.step (PReach.step PReach.init h1) h2) h3) h4) h5,
    rfl⟩

end PackingTheory
