/-!
# Defs: spans, buffers, keys and the protected set

Mirror of `proofs/coq/Defs.v` (core Lean 4 only).

A span is one buffered occurrence: its occurrence id (the 0-based arrival
index), its original BOS-inclusive length and its current length. The arrival
stream is a function `len` from occurrence ids to original lengths; every
definition takes it as an explicit argument.

The Coq development uses the standard library's `seq`, `filter`, `NoDup` and
`nth`; to stay independent of library lemma names this file defines its own
small versions (`seqN`, `filt`, `NoDupL`, `ids`, `eraseL`) and proves the few
facts it needs about them.
-/

namespace PackingTheory

structure Span where
  sid : Nat
  orig : Nat
  cur : Nat
  deriving DecidableEq, Repr

abbrev Buffer := List Span

/-! ## Small list toolkit -/

/-- `seqN s n = [s, s+1, ..., s+n-1]` (Coq `seq`). -/
def seqN : Nat → Nat → List Nat
  | _, 0 => []
  | s, n + 1 => s :: seqN (s + 1) n

/-- `filter` written with an `if` (Coq `filter`). -/
def filt (p : Nat → Bool) : List Nat → List Nat
  | [] => []
  | a :: t => if p a = true then a :: filt p t else filt p t

/-- Duplicate-free lists (Coq `NoDup`). -/
inductive NoDupL : List Nat → Prop
  | nil : NoDupL []
  | cons {x : Nat} {l : List Nat} : x ∉ l → NoDupL l → NoDupL (x :: l)

/-- The occurrence ids of a buffer (Coq `map sid`). -/
def ids : Buffer → List Nat
  | [] => []
  | s :: t => s.sid :: ids t

/-- `nth` with default `0` (Coq `nth i l 0`). -/
def nthD : List Nat → Nat → Nat
  | [], _ => 0
  | x :: _, 0 => x
  | _ :: t, k + 1 => nthD t k

/-- Remove the first occurrence of `x`. -/
def eraseL (x : Nat) : List Nat → List Nat
  | [] => []
  | y :: t => if y = x then t else y :: eraseL x t

/-! ## Keys and orders -/

/-- Lexicographic strict order on keys (length, id). -/
def keyLt (a b : Nat × Nat) : Prop :=
  a.1 < b.1 ∨ (a.1 = b.1 ∧ a.2 < b.2)

def keyLtb (a b : Nat × Nat) : Bool :=
  decide (a.1 < b.1) || (decide (a.1 = b.1) && decide (a.2 < b.2))

theorem key_ltb_spec (a b : Nat × Nat) : keyLtb a b = true ↔ keyLt a b := by
  unfold keyLtb keyLt
  simp only [Bool.or_eq_true, Bool.and_eq_true, decide_eq_true_eq]

/-- Lexicographic non-strict order on (current length, id). -/
def lexLe (a b : Nat × Nat) : Prop :=
  a.1 < b.1 ∨ (a.1 = b.1 ∧ a.2 ≤ b.2)

/-- `s` is minimal in `b` by (current length, occurrence id). -/
def lexmin (b : Buffer) (s : Span) : Prop :=
  ∀ t, t ∈ b → lexLe (s.cur, s.sid) (t.cur, t.sid)

/-- Buffered mass: sum of current lengths. -/
def mass : Buffer → Nat
  | [] => 0
  | s :: t => s.cur + mass t

/-- Occurrence ids strictly increasing in buffer order. -/
def incrIds : Buffer → Prop
  | [] => True
  | s :: t => (∀ u, u ∈ t → s.sid < u.sid) ∧ incrIds t

/-! ## Long occurrences and the protected set -/

/-- Long = original length strictly greater than the row capacity. -/
def isLong (R L : Nat) : Prop := R < L

def longb (R L : Nat) : Bool := decide (R < L)

/-- Long occurrences among the first `n` arrivals with a key strictly larger
than the key `(len p, p)`. -/
def largerKeys (R : Nat) (len : Nat → Nat) (n p : Nat) : List Nat :=
  filt (fun j => longb R (len j) && keyLtb (len p, p) (len j, j)) (seqN 0 n)

/-- The protected set, defined without sorting: after `n` arrivals `p` is
protected iff it has arrived, it is long, and fewer than `B - 1` long arrivals
have a strictly larger key. (`protected` is a Lean keyword, hence the name.)
`TopKeys.lean` proves that this is the set of the `min (B - 1) N_L` largest
keys among the long arrivals. -/
def isProtected (R B : Nat) (len : Nat → Nat) (n p : Nat) : Prop :=
  p < n ∧ isLong R (len p) ∧ (largerKeys R len n p).length < B - 1

def protectedb (R B : Nat) (len : Nat → Nat) (n p : Nat) : Bool :=
  decide (p < n) && longb R (len p) && decide ((largerKeys R len n p).length < B - 1)

def protectedSet (R B : Nat) (len : Nat → Nat) (n : Nat) : List Nat :=
  filt (protectedb R B len n) (seqN 0 n)

/-- Number of long occurrences among the first `n` arrivals. -/
def longCount (R : Nat) (len : Nat → Nat) (n : Nat) : Nat :=
  (filt (fun j => longb R (len j)) (seqN 0 n)).length

/-- Number of occurrences of original length at least `l` among the first `n`. -/
def countGe (len : Nat → Nat) (l n : Nat) : Nat :=
  (filt (fun j => decide (l ≤ len j)) (seqN 0 n)).length

/-- The unchanged (unstarted) span of occurrence `p`. -/
def unchanged (len : Nat → Nat) (p : Nat) : Span := ⟨p, len p, len p⟩

/-- Sum of the original lengths of a list of occurrences. -/
def sumLen (len : Nat → Nat) : List Nat → Nat
  | [] => 0
  | i :: t => len i + sumLen len t

/-! ## Toolkit lemmas -/

theorem mem_seqN (s n x : Nat) : x ∈ seqN s n ↔ s ≤ x ∧ x < s + n := by
  induction n generalizing s with
  | zero =>
    simp only [seqN]
    constructor
    · intro h
      cases h
    · intro h
      obtain ⟨h1, h2⟩ := h
      exfalso
      omega
  | succ n ih =>
    simp only [seqN, List.mem_cons, ih]
    constructor
    · intro h
      cases h with
      | inl h => exact ⟨by omega, by omega⟩
      | inr h =>
        obtain ⟨h1, h2⟩ := h
        exact ⟨by omega, by omega⟩
    · intro h
      obtain ⟨h1, h2⟩ := h
      by_cases hx : x = s
      · exact Or.inl hx
      · exact Or.inr ⟨by omega, by omega⟩

theorem seqN_succ (s n : Nat) : seqN s (n + 1) = seqN s n ++ [s + n] := by
  induction n generalizing s with
  | zero => rfl
  | succ n ih =>
    show s :: seqN (s + 1) (n + 1) = (s :: seqN (s + 1) n) ++ [s + (n + 1)]
    rw [ih (s + 1), List.cons_append]
    have e : s + 1 + n = s + (n + 1) := by omega
    rw [e]

theorem seqN_add (s n m : Nat) : seqN s (n + m) = seqN s n ++ seqN (s + n) m := by
  induction m with
  | zero => simp only [seqN, Nat.add_zero, List.append_nil]
  | succ m ih =>
    have e : n + (m + 1) = (n + m) + 1 := by omega
    rw [e, seqN_succ s (n + m), ih, seqN_succ (s + n) m, List.append_assoc]
    have e2 : s + (n + m) = s + n + m := by omega
    rw [e2]

theorem mem_filt (p : Nat → Bool) (l : List Nat) (x : Nat) :
    x ∈ filt p l ↔ x ∈ l ∧ p x = true := by
  induction l with
  | nil =>
    simp only [filt]
    constructor
    · intro h
      cases h
    · intro h
      obtain ⟨h1, _⟩ := h
      cases h1
  | cons a t ih =>
    simp only [filt]
    by_cases ha : p a = true
    · rw [if_pos ha, List.mem_cons, List.mem_cons, ih]
      constructor
      · intro h
        cases h with
        | inl h => exact ⟨Or.inl h, by rw [h]; exact ha⟩
        | inr h => exact ⟨Or.inr h.1, h.2⟩
      · intro h
        obtain ⟨h1, h2⟩ := h
        cases h1 with
        | inl h => exact Or.inl h
        | inr h => exact Or.inr ⟨h, h2⟩
    · rw [if_neg ha, ih, List.mem_cons]
      constructor
      · intro h
        exact ⟨Or.inr h.1, h.2⟩
      · intro h
        obtain ⟨h1, h2⟩ := h
        cases h1 with
        | inl h =>
          rw [h] at h2
          exact absurd h2 ha
        | inr h => exact ⟨h, h2⟩

theorem filt_append (p : Nat → Bool) (l1 l2 : List Nat) :
    filt p (l1 ++ l2) = filt p l1 ++ filt p l2 := by
  induction l1 with
  | nil => rfl
  | cons a t ih =>
    simp only [List.cons_append, filt]
    by_cases ha : p a = true
    · rw [if_pos ha, if_pos ha, ih, List.cons_append]
    · rw [if_neg ha, if_neg ha, ih]

theorem nodup_seqN (s n : Nat) : NoDupL (seqN s n) := by
  induction n generalizing s with
  | zero => exact NoDupL.nil
  | succ n ih =>
    show NoDupL (s :: seqN (s + 1) n)
    apply NoDupL.cons
    · intro h
      have h' := (mem_seqN (s + 1) n s).mp h
      obtain ⟨h1, _⟩ := h'
      omega
    · exact ih (s + 1)

theorem nodup_filt (p : Nat → Bool) (l : List Nat) (h : NoDupL l) : NoDupL (filt p l) := by
  induction h with
  | nil => exact NoDupL.nil
  | @cons x l hx _ ih =>
    simp only [filt]
    by_cases hp : p x = true
    · rw [if_pos hp]
      apply NoDupL.cons
      · intro hm
        exact hx ((mem_filt p l x).mp hm).1
      · exact ih
    · rw [if_neg hp]
      exact ih

theorem mem_ids (b : Buffer) (i : Nat) : i ∈ ids b ↔ ∃ s, s ∈ b ∧ s.sid = i := by
  induction b with
  | nil =>
    simp only [ids]
    constructor
    · intro h
      cases h
    · intro h
      obtain ⟨s, hs, _⟩ := h
      cases hs
  | cons x t ih =>
    simp only [ids, List.mem_cons, ih]
    constructor
    · intro h
      cases h with
      | inl h => exact ⟨x, Or.inl rfl, h.symm⟩
      | inr h =>
        obtain ⟨s, hs, he⟩ := h
        exact ⟨s, Or.inr hs, he⟩
    · intro h
      obtain ⟨s, hs, he⟩ := h
      cases hs with
      | inl hs =>
        rw [hs] at he
        exact Or.inl he.symm
      | inr hs => exact Or.inr ⟨s, hs, he⟩

theorem length_ids (b : Buffer) : (ids b).length = b.length := by
  induction b with
  | nil => rfl
  | cons x t ih =>
    simp only [ids, List.length_cons, ih]

theorem in_split (s : Span) (b : Buffer) (h : s ∈ b) : ∃ b1 b2, b = b1 ++ s :: b2 := by
  induction b with
  | nil => cases h
  | cons x t ih =>
    rw [List.mem_cons] at h
    cases h with
    | inl h => exact ⟨[], t, by rw [h, List.nil_append]⟩
    | inr h =>
      obtain ⟨b1, b2, e⟩ := ih h
      exact ⟨x :: b1, b2, by rw [e, List.cons_append]⟩

theorem length_eraseL (x : Nat) (l : List Nat) (h : x ∈ l) :
    (eraseL x l).length + 1 = l.length := by
  induction l with
  | nil => cases h
  | cons y t ih =>
    simp only [eraseL]
    by_cases hy : y = x
    · rw [if_pos hy, List.length_cons]
    · rw [if_neg hy, List.length_cons, List.length_cons]
      rw [List.mem_cons] at h
      cases h with
      | inl h => exact absurd h.symm hy
      | inr h =>
        have := ih h
        omega

theorem mem_eraseL (x y : Nat) (l : List Nat) (h : y ∈ l) (hne : y ≠ x) : y ∈ eraseL x l := by
  induction l with
  | nil => cases h
  | cons z t ih =>
    simp only [eraseL]
    rw [List.mem_cons] at h
    by_cases hz : z = x
    · rw [if_pos hz]
      cases h with
      | inl h =>
        rw [h] at hne
        exact absurd hz hne
      | inr h => exact h
    · rw [if_neg hz, List.mem_cons]
      cases h with
      | inl h => exact Or.inl h
      | inr h => exact Or.inr (ih h)

/-- Pigeonhole for duplicate-free lists (Coq `NoDup_incl_length`). -/
theorem nodup_incl_length (l : List Nat) (h : NoDupL l) :
    ∀ l', (∀ x, x ∈ l → x ∈ l') → l.length ≤ l'.length := by
  induction h with
  | nil =>
    intro l' _
    exact Nat.zero_le _
  | @cons x l hx _ ih =>
    intro l' hincl
    have hxl : x ∈ l' := hincl x (List.Mem.head _)
    have hrest : ∀ y, y ∈ l → y ∈ eraseL x l' := by
      intro y hy
      apply mem_eraseL x y l' (hincl y (List.Mem.tail _ hy))
      intro e
      rw [e] at hy
      exact hx hy
    have h1 := ih (eraseL x l') hrest
    have h2 := length_eraseL x l' hxl
    simp only [List.length_cons]
    omega

theorem incr_ids_app (b1 b2 : Buffer) :
    incrIds (b1 ++ b2) ↔
      incrIds b1 ∧ incrIds b2 ∧ (∀ x y, x ∈ b1 → y ∈ b2 → x.sid < y.sid) := by
  induction b1 with
  | nil =>
    simp only [List.nil_append]
    constructor
    · intro h
      exact ⟨trivial, h, fun x y hx _ => by cases hx⟩
    · intro h
      exact h.2.1
  | cons s b1 ih =>
    simp only [List.cons_append, incrIds]
    rw [ih]
    constructor
    · intro h
      obtain ⟨h1, h2, h3, h4⟩ := h
      refine ⟨⟨?_, h2⟩, h3, ?_⟩
      · intro u hu
        exact h1 u (List.mem_append.mpr (Or.inl hu))
      · intro x y hx hy
        rw [List.mem_cons] at hx
        cases hx with
        | inl hx =>
          rw [hx]
          exact h1 y (List.mem_append.mpr (Or.inr hy))
        | inr hx => exact h4 x y hx hy
    · intro h
      obtain ⟨⟨h1, h2⟩, h3, h4⟩ := h
      refine ⟨?_, h2, h3, ?_⟩
      · intro u hu
        cases List.mem_append.mp hu with
        | inl hu => exact h1 u hu
        | inr hu => exact h4 s u (List.Mem.head _) hu
      · intro x y hx hy
        exact h4 x y (List.Mem.tail _ hx) hy

theorem incr_ids_NoDup (b : Buffer) (h : incrIds b) : NoDupL (ids b) := by
  induction b with
  | nil => exact NoDupL.nil
  | cons s t ih =>
    have h' : (∀ u, u ∈ t → s.sid < u.sid) ∧ incrIds t := h
    obtain ⟨h1, h2⟩ := h'
    show NoDupL (s.sid :: ids t)
    apply NoDupL.cons
    · intro hin
      obtain ⟨u, hu, he⟩ := (mem_ids t s.sid).mp hin
      have := h1 u hu
      omega
    · exact ih h2

theorem incr_ids_unique (b : Buffer) (x y : Span) (h : incrIds b) (hx : x ∈ b) (hy : y ∈ b)
    (he : x.sid = y.sid) : x = y := by
  induction b with
  | nil => cases hx
  | cons s t ih =>
    have h' : (∀ u, u ∈ t → s.sid < u.sid) ∧ incrIds t := h
    obtain ⟨h1, h2⟩ := h'
    rw [List.mem_cons] at hx hy
    cases hx with
    | inl hx =>
      cases hy with
      | inl hy => rw [hx, hy]
      | inr hy =>
        have := h1 y hy
        rw [← hx] at this
        exfalso
        omega
    | inr hx =>
      cases hy with
      | inl hy =>
        have := h1 x hx
        rw [← hy] at this
        exfalso
        omega
      | inr hy => exact ih h2 hx hy

theorem filter_length_le (f g : Nat → Bool) (l : List Nat)
    (h : ∀ x, x ∈ l → f x = true → g x = true) :
    (filt f l).length ≤ (filt g l).length := by
  induction l with
  | nil => exact Nat.le_refl _
  | cons a t ih =>
    have ih' := ih (fun x hx hf => h x (List.Mem.tail _ hx) hf)
    simp only [filt]
    by_cases hf : f a = true
    · have hg : g a = true := h a (List.Mem.head _) hf
      rw [if_pos hf, if_pos hg, List.length_cons, List.length_cons]
      omega
    · rw [if_neg hf]
      by_cases hg : g a = true
      · rw [if_pos hg, List.length_cons]
        omega
      · rw [if_neg hg]
        exact ih'

theorem filter_length_lt (f g : Nat → Bool) (l : List Nat) (y : Nat)
    (h : ∀ x, x ∈ l → f x = true → g x = true)
    (hy : y ∈ l) (gy : g y = true) (fy : f y = false) :
    (filt f l).length < (filt g l).length := by
  induction l with
  | nil => cases hy
  | cons a t ih =>
    have hle := filter_length_le f g t (fun x hx hf => h x (List.Mem.tail _ hx) hf)
    simp only [filt]
    rw [List.mem_cons] at hy
    cases hy with
    | inl hy =>
      rw [hy] at gy fy
      have hf : ¬ (f a = true) := by
        intro hc
        rw [fy] at hc
        cases hc
      rw [if_neg hf, if_pos gy, List.length_cons]
      omega
    | inr hy =>
      have ih' := ih (fun x hx hf => h x (List.Mem.tail _ hx) hf) hy
      by_cases hf : f a = true
      · have hg : g a = true := h a (List.Mem.head _) hf
        rw [if_pos hf, if_pos hg, List.length_cons, List.length_cons]
        omega
      · rw [if_neg hf]
        by_cases hg : g a = true
        · rw [if_pos hg, List.length_cons]
          omega
        · rw [if_neg hg]
          exact ih'

/-! ## The protected set -/

theorem protectedb_spec (R B : Nat) (len : Nat → Nat) (n p : Nat) :
    protectedb R B len n p = true ↔ isProtected R B len n p := by
  unfold protectedb isProtected isLong longb
  simp only [Bool.and_eq_true, decide_eq_true_eq, and_assoc]

theorem protected_set_spec (R B : Nat) (len : Nat → Nat) (n p : Nat) :
    p ∈ protectedSet R B len n ↔ isProtected R B len n p := by
  unfold protectedSet
  rw [mem_filt, mem_seqN, protectedb_spec]
  constructor
  · intro h
    exact h.2
  · intro h
    refine ⟨⟨Nat.zero_le _, ?_⟩, h⟩
    have := h.1
    omega

theorem protected_set_NoDup (R B : Nat) (len : Nat → Nat) (n : Nat) :
    NoDupL (protectedSet R B len n) :=
  nodup_filt _ _ (nodup_seqN 0 n)

end PackingTheory
