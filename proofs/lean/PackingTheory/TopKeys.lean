import PackingTheory.Defs

/-!
# TopKeys: the sort-free protected set is the set of the largest keys

Mirror of `proofs/coq/TopKeys.v` (core Lean 4 only).

`isProtected` (Defs.lean) is defined without sorting: after `n` arrivals `p` is
protected iff `p < n`, `p` is long and fewer than `B - 1` long arrivals have a
strictly larger key `(len j, j)`. This file proves that this is exactly the set
of the `min (B - 1) N_L` largest keys among the long arrivals, where
`N_L = longCount R len n`:

* `protected_set_length`: the protected set has exactly `min (B - 1) N_L`
  elements;
* `protected_top`: every long arrival that is not protected has a strictly
  smaller key than every protected occurrence;
* `protected_upward_closed`: a long arrival with a larger key than a protected
  occurrence is itself protected;
* `top_keys_unique`: any duplicate-free list of long arrivals with
  `min (B - 1) N_L` elements and the top property of `protected_top` has
  exactly the protected occurrences as members.

The proof works with the rank `rank R len n p = (largerKeys R len n p).length`:
it is injective on long arrivals and below `N_L`, so the protected occurrences
(rank `< B - 1`) and the unprotected long arrivals (rank `≥ B - 1`) are counted
by two pigeonhole bounds whose sum is `N_L`.

Besides the Coq declarations, this file defines `mapN` (Coq `map`) and proves
the small facts the Coq file takes from the standard library (`length_mapN`,
`mem_mapN_exists`, `length_seqN`, `filt_cons_true`, `filt_cons_false`,
`min_cases`).
-/

namespace PackingTheory

/-! ## Small list toolkit -/

/-- `map` on lists of naturals (Coq `map`). -/
def mapN (f : Nat → Nat) : List Nat → List Nat
  | [] => []
  | a :: t => f a :: mapN f t

theorem length_mapN (f : Nat → Nat) (l : List Nat) : (mapN f l).length = l.length := by
  induction l with
  | nil => rfl
  | cons a t ih =>
    simp only [mapN, List.length_cons, ih]

theorem mem_mapN_exists (f : Nat → Nat) (l : List Nat) (y : Nat) (h : y ∈ mapN f l) :
    ∃ x, x ∈ l ∧ f x = y := by
  induction l with
  | nil =>
    have h' : y ∈ ([] : List Nat) := h
    cases h'
  | cons a t ih =>
    have h' : y ∈ f a :: mapN f t := h
    rw [List.mem_cons] at h'
    cases h' with
    | inl e => exact ⟨a, List.Mem.head _, e.symm⟩
    | inr hm =>
      obtain ⟨x, hx, e⟩ := ih hm
      exact ⟨x, List.Mem.tail _ hx, e⟩

theorem length_seqN (s n : Nat) : (seqN s n).length = n := by
  induction n generalizing s with
  | zero => rfl
  | succ n ih =>
    show (s :: seqN (s + 1) n).length = n + 1
    rw [List.length_cons, ih (s + 1)]

theorem filt_cons_true (p : Nat → Bool) (a : Nat) (t : List Nat) (h : p a = true) :
    filt p (a :: t) = a :: filt p t := by
  show (if p a = true then a :: filt p t else filt p t) = a :: filt p t
  rw [if_pos h]

theorem filt_cons_false (p : Nat → Bool) (a : Nat) (t : List Nat) (h : p a = false) :
    filt p (a :: t) = filt p t := by
  show (if p a = true then a :: filt p t else filt p t) = filt p t
  have hn : ¬ (p a = true) := by
    intro hc
    rw [h] at hc
    cases hc
  rw [if_neg hn]

theorem min_cases (a b : Nat) : (a ≤ b ∧ min a b = a) ∨ (b < a ∧ min a b = b) := by
  have e : min a b = (if a ≤ b then a else b) := rfl
  by_cases h : a ≤ b
  · exact Or.inl ⟨h, by rw [e, if_pos h]⟩
  · exact Or.inr ⟨by omega, by rw [e, if_neg h]⟩

/-! ## Generic list facts -/

theorem map_NoDup_inj_on (f : Nat → Nat) (l : List Nat) (hnd : NoDupL l) :
    (∀ x y, x ∈ l → y ∈ l → f x = f y → x = y) → NoDupL (mapN f l) := by
  induction hnd with
  | nil =>
    intro _
    exact NoDupL.nil
  | @cons a t ha _ ih =>
    intro hinj
    show NoDupL (f a :: mapN f t)
    apply NoDupL.cons
    · intro hin
      obtain ⟨x, hx, e⟩ := mem_mapN_exists f t (f a) hin
      have exa : x = a := hinj x a (List.Mem.tail _ hx) (List.Mem.head _) e
      rw [exa] at hx
      exact ha hx
    · exact ih (fun x y hx hy e => hinj x y (List.Mem.tail _ hx) (List.Mem.tail _ hy) e)

/-- Pigeonhole: an injection of a duplicate-free list into the interval
`[a, a + k)` has at most `k` elements. -/
theorem inj_range_length (f : Nat → Nat) (l : List Nat) (a k : Nat) (hnd : NoDupL l)
    (hinj : ∀ x y, x ∈ l → y ∈ l → f x = f y → x = y)
    (hr : ∀ x, x ∈ l → a ≤ f x ∧ f x < a + k) : l.length ≤ k := by
  have hnd' := map_NoDup_inj_on f l hnd hinj
  have hincl : ∀ i, i ∈ mapN f l → i ∈ seqN a k := by
    intro i hi
    obtain ⟨x, hx, e⟩ := mem_mapN_exists f l i hi
    rw [← e]
    exact (mem_seqN a k (f x)).mpr (hr x hx)
  have hle := nodup_incl_length (mapN f l) hnd' (seqN a k) hincl
  rw [length_mapN, length_seqN] at hle
  exact hle

/-- Splitting `filt f l` into the elements that satisfy `g` and the others,
when `g` implies `f` on `l`. -/
theorem filter_split_length (f g : Nat → Bool) (l : List Nat)
    (h : ∀ x, x ∈ l → g x = true → f x = true) :
    (filt g l).length + (filt (fun x => f x && !(g x)) l).length = (filt f l).length := by
  induction l with
  | nil => rfl
  | cons a t ih =>
    have ih' := ih (fun x hx hg => h x (List.Mem.tail _ hx) hg)
    cases hg : g a with
    | true =>
      have hf : f a = true := h a (List.Mem.head _) hg
      have hq : (fun x => f x && !(g x)) a = false := by
        show (f a && !(g a)) = false
        rw [hf, hg, Bool.not_true, Bool.and_false]
      rw [filt_cons_true g a t hg, filt_cons_true f a t hf,
        filt_cons_false (fun x => f x && !(g x)) a t hq, List.length_cons, List.length_cons]
      omega
    | false =>
      cases hf : f a with
      | true =>
        have hq : (fun x => f x && !(g x)) a = true := by
          show (f a && !(g a)) = true
          rw [hf, hg, Bool.not_false, Bool.and_true]
        rw [filt_cons_false g a t hg, filt_cons_true f a t hf,
          filt_cons_true (fun x => f x && !(g x)) a t hq, List.length_cons, List.length_cons]
        omega
      | false =>
        have hq : (fun x => f x && !(g x)) a = false := by
          show (f a && !(g a)) = false
          rw [hf, Bool.false_and]
        rw [filt_cons_false g a t hg, filt_cons_false f a t hf,
          filt_cons_false (fun x => f x && !(g x)) a t hq]
        exact ih'

/-! ## Keys -/

theorem key_lt_irrefl (k : Nat × Nat) : ¬ keyLt k k := by
  intro h
  have h' : k.1 < k.1 ∨ (k.1 = k.1 ∧ k.2 < k.2) := h
  cases h' with
  | inl h1 => exact Nat.lt_irrefl _ h1
  | inr h1 => exact Nat.lt_irrefl _ h1.2

theorem key_lt_trans (a b c : Nat × Nat) (hab : keyLt a b) (hbc : keyLt b c) : keyLt a c := by
  have h1 : a.1 < b.1 ∨ (a.1 = b.1 ∧ a.2 < b.2) := hab
  have h2 : b.1 < c.1 ∨ (b.1 = c.1 ∧ b.2 < c.2) := hbc
  show a.1 < c.1 ∨ (a.1 = c.1 ∧ a.2 < c.2)
  cases h1 with
  | inl h1 =>
    cases h2 with
    | inl h2 => exact Or.inl (by omega)
    | inr h2 =>
      obtain ⟨h21, _⟩ := h2
      exact Or.inl (by omega)
  | inr h1 =>
    obtain ⟨h11, h12⟩ := h1
    cases h2 with
    | inl h2 => exact Or.inl (by omega)
    | inr h2 =>
      obtain ⟨h21, h22⟩ := h2
      exact Or.inr ⟨by omega, by omega⟩

theorem key_lt_asym (a b : Nat × Nat) (h : keyLt a b) : ¬ keyLt b a := by
  intro h'
  exact key_lt_irrefl a (key_lt_trans a b a h h')

theorem key_ltb_irrefl (k : Nat × Nat) : keyLtb k k = false := by
  cases hb : keyLtb k k with
  | false => rfl
  | true =>
    exfalso
    exact key_lt_irrefl k ((key_ltb_spec k k).mp hb)

/-- Keys of distinct occurrences are distinct, hence comparable. -/
theorem key_trichotomy (len : Nat → Nat) (p q : Nat) (h : p ≠ q) :
    keyLt (len p, p) (len q, q) ∨ keyLt (len q, q) (len p, p) := by
  show (len p < len q ∨ (len p = len q ∧ p < q)) ∨ (len q < len p ∨ (len q = len p ∧ q < p))
  by_cases h1 : len p < len q
  · exact Or.inl (Or.inl h1)
  · by_cases h2 : len q < len p
    · exact Or.inr (Or.inl h2)
    · have e : len p = len q := by omega
      by_cases h3 : p < q
      · exact Or.inl (Or.inr ⟨e, h3⟩)
      · exact Or.inr (Or.inr ⟨e.symm, by omega⟩)

/-! ## Rank -/

/-- The rank of `p`: the number of long arrivals with a larger key. -/
def rank (R : Nat) (len : Nat → Nat) (n p : Nat) : Nat := (largerKeys R len n p).length

theorem protected_rank (R B : Nat) (len : Nat → Nat) (n p : Nat) :
    isProtected R B len n p ↔ p < n ∧ isLong R (len p) ∧ rank R len n p < B - 1 :=
  Iff.rfl

theorem rank_lt_long_count (R : Nat) (len : Nat → Nat) (n p : Nat) (hp : p < n)
    (hl : isLong R (len p)) : rank R len n p < longCount R len n := by
  unfold rank largerKeys longCount
  apply filter_length_lt _ _ _ p
  · intro x _ hx
    have hx' : (longb R (len x) && keyLtb (len p, p) (len x, x)) = true := hx
    rw [Bool.and_eq_true] at hx'
    exact hx'.1
  · exact (mem_seqN 0 n p).mpr ⟨Nat.zero_le _, by omega⟩
  · show decide (R < len p) = true
    rw [decide_eq_true_eq]
    exact hl
  · show (longb R (len p) && keyLtb (len p, p) (len p, p)) = false
    rw [key_ltb_irrefl, Bool.and_false]

/-- A larger key has a strictly smaller rank. -/
theorem rank_lt_of_key_lt (R : Nat) (len : Nat → Nat) (n p q : Nat) (hq : q < n)
    (hl : isLong R (len q)) (hk : keyLt (len p, p) (len q, q)) :
    rank R len n q < rank R len n p := by
  unfold rank largerKeys
  apply filter_length_lt _ _ _ q
  · intro x _ hx
    have hx' : (longb R (len x) && keyLtb (len q, q) (len x, x)) = true := hx
    rw [Bool.and_eq_true] at hx'
    obtain ⟨hx1, hx2⟩ := hx'
    show (longb R (len x) && keyLtb (len p, p) (len x, x)) = true
    rw [Bool.and_eq_true]
    exact ⟨hx1, (key_ltb_spec _ _).mpr (key_lt_trans _ _ _ hk ((key_ltb_spec _ _).mp hx2))⟩
  · exact (mem_seqN 0 n q).mpr ⟨Nat.zero_le _, by omega⟩
  · show (longb R (len q) && keyLtb (len p, p) (len q, q)) = true
    rw [Bool.and_eq_true]
    have hl' : R < len q := hl
    exact ⟨decide_eq_true hl', (key_ltb_spec _ _).mpr hk⟩
  · show (longb R (len q) && keyLtb (len q, q) (len q, q)) = false
    rw [key_ltb_irrefl, Bool.and_false]

theorem rank_inj (R : Nat) (len : Nat → Nat) (n p q : Nat) (hp : p < n) (hq : q < n)
    (hlp : isLong R (len p)) (hlq : isLong R (len q))
    (e : rank R len n p = rank R len n q) : p = q := by
  by_cases hpq : p = q
  · exact hpq
  · exfalso
    cases key_trichotomy len p q hpq with
    | inl hk =>
      have h := rank_lt_of_key_lt R len n p q hq hlq hk
      omega
    | inr hk =>
      have h := rank_lt_of_key_lt R len n q p hp hlp hk
      omega

/-! ## Top-ness -/

theorem protected_upward_closed (R B : Nat) (len : Nat → Nat) (n p q : Nat)
    (hp : isProtected R B len n p) (hq : q < n) (hl : isLong R (len q))
    (hk : keyLt (len p, p) (len q, q)) : isProtected R B len n q := by
  obtain ⟨_, _, hr⟩ := hp
  have hr' : rank R len n p < B - 1 := hr
  have h := rank_lt_of_key_lt R len n p q hq hl hk
  have hq' : rank R len n q < B - 1 := by omega
  exact ⟨hq, hl, hq'⟩

theorem protected_top (R B : Nat) (len : Nat → Nat) (n p q : Nat)
    (hp : isProtected R B len n p) (hq : q < n) (hl : isLong R (len q))
    (hnq : ¬ isProtected R B len n q) : keyLt (len q, q) (len p, p) := by
  by_cases e : q = p
  · rw [e] at hnq
    exact absurd hp hnq
  · cases key_trichotomy len q p e with
    | inl hk => exact hk
    | inr hk => exact absurd (protected_upward_closed R B len n p q hp hq hl hk) hnq

/-! ## Cardinality -/

theorem protected_set_length (R B : Nat) (len : Nat → Nat) (n : Nat) :
    (protectedSet R B len n).length = min (B - 1) (longCount R len n) := by
  -- |P| + |Q| = N_L
  have hsplit : (protectedSet R B len n).length +
      (filt (fun x => longb R (len x) && !(protectedb R B len n x)) (seqN 0 n)).length =
      longCount R len n := by
    exact filter_split_length (fun j => longb R (len j)) (protectedb R B len n) (seqN 0 n)
      (by
        intro x _ hx
        obtain ⟨_, hl, _⟩ := (protectedb_spec R B len n x).mp hx
        show decide (R < len x) = true
        rw [decide_eq_true_eq]
        exact hl)
  -- the ranks of the protected occurrences lie in [0, min (B - 1) N_L)
  have hP : (protectedSet R B len n).length ≤ min (B - 1) (longCount R len n) := by
    apply inj_range_length (rank R len n) _ 0
    · exact protected_set_NoDup R B len n
    · intro x y hx hy e
      obtain ⟨hx1, hx2, _⟩ := (protected_set_spec R B len n x).mp hx
      obtain ⟨hy1, hy2, _⟩ := (protected_set_spec R B len n y).mp hy
      exact rank_inj R len n x y hx1 hy1 hx2 hy2 e
    · intro x hx
      obtain ⟨hx1, hx2, hx3⟩ := (protected_set_spec R B len n x).mp hx
      have h3 : rank R len n x < B - 1 := hx3
      have h4 := rank_lt_long_count R len n x hx1 hx2
      have hm := min_cases (B - 1) (longCount R len n)
      constructor
      · omega
      · omega
  -- the ranks of the unprotected long arrivals lie in [B - 1, N_L)
  have hQmem : ∀ x,
      x ∈ filt (fun x => longb R (len x) && !(protectedb R B len n x)) (seqN 0 n) →
      x < n ∧ isLong R (len x) ∧ B - 1 ≤ rank R len n x := by
    intro x hx
    obtain ⟨hx1, hx2⟩ := (mem_filt _ _ x).mp hx
    have hx1' := (mem_seqN 0 n x).mp hx1
    have hx2' : (longb R (len x) && !(protectedb R B len n x)) = true := hx2
    rw [Bool.and_eq_true] at hx2'
    obtain ⟨hl, hnp⟩ := hx2'
    have hl0 : decide (R < len x) = true := hl
    have hl' : R < len x := of_decide_eq_true hl0
    have hxn : x < n := by omega
    by_cases hr : rank R len n x < B - 1
    · exfalso
      have hp : protectedb R B len n x = true :=
        (protectedb_spec R B len n x).mpr ⟨hxn, hl', hr⟩
      rw [hp] at hnp
      exact absurd hnp (by decide)
    · exact ⟨hxn, hl', by omega⟩
  have hQ : (filt (fun x => longb R (len x) && !(protectedb R B len n x)) (seqN 0 n)).length ≤
      longCount R len n - (B - 1) := by
    apply inj_range_length (rank R len n) _ (B - 1)
    · exact nodup_filt _ _ (nodup_seqN 0 n)
    · intro x y hx hy e
      obtain ⟨hx1, hx2, _⟩ := hQmem x hx
      obtain ⟨hy1, hy2, _⟩ := hQmem y hy
      exact rank_inj R len n x y hx1 hy1 hx2 hy2 e
    · intro x hx
      obtain ⟨hx1, hx2, hx3⟩ := hQmem x hx
      have h4 := rank_lt_long_count R len n x hx1 hx2
      constructor
      · exact hx3
      · omega
  have hm := min_cases (B - 1) (longCount R len n)
  omega

/-! ## Uniqueness -/

/-- The protected set is the only set of `min (B - 1) N_L` long arrivals with
the top property. -/
theorem top_keys_unique (R B : Nat) (len : Nat → Nat) (n : Nat) (K : List Nat)
    (hnd : NoDupL K)
    (hmem : ∀ p, p ∈ K → p < n ∧ isLong R (len p))
    (hlen : K.length = min (B - 1) (longCount R len n))
    (htop : ∀ p q, p ∈ K → q < n → isLong R (len q) → q ∉ K → keyLt (len q, q) (len p, p))
    (p : Nat) : p ∈ K ↔ isProtected R B len n p := by
  have hm := min_cases (B - 1) (longCount R len n)
  constructor
  · -- p :: largerKeys n p is included in K
    intro hp
    obtain ⟨hpn, hpl⟩ := hmem p hp
    have hincl : ∀ j, j ∈ p :: largerKeys R len n p → j ∈ K := by
      intro j hj
      rw [List.mem_cons] at hj
      cases hj with
      | inl hj =>
        rw [hj]
        exact hp
      | inr hj =>
        have hj0 : j ∈ filt (fun i => longb R (len i) && keyLtb (len p, p) (len i, i))
            (seqN 0 n) := hj
        obtain ⟨hj1, hj2⟩ := (mem_filt _ _ j).mp hj0
        have hj1' := (mem_seqN 0 n j).mp hj1
        have hj2' : (longb R (len j) && keyLtb (len p, p) (len j, j)) = true := hj2
        rw [Bool.and_eq_true] at hj2'
        obtain ⟨hl, hk⟩ := hj2'
        have hl0 : decide (R < len j) = true := hl
        have hl' : R < len j := of_decide_eq_true hl0
        have hk' := (key_ltb_spec _ _).mp hk
        have hjn : j < n := by omega
        by_cases hjS : j ∈ K
        · exact hjS
        · exfalso
          exact key_lt_asym _ _ hk' (htop p j hp hjn hl' hjS)
    have hnd' : NoDupL (p :: largerKeys R len n p) := by
      apply NoDupL.cons
      · intro hin
        have hin0 : p ∈ filt (fun i => longb R (len i) && keyLtb (len p, p) (len i, i))
            (seqN 0 n) := hin
        obtain ⟨_, hin2⟩ := (mem_filt _ _ p).mp hin0
        have hin2' : (longb R (len p) && keyLtb (len p, p) (len p, p)) = true := hin2
        rw [key_ltb_irrefl, Bool.and_false] at hin2'
        cases hin2'
      · exact nodup_filt _ _ (nodup_seqN 0 n)
    have hle := nodup_incl_length (p :: largerKeys R len n p) hnd' K hincl
    rw [List.length_cons] at hle
    have hr : (largerKeys R len n p).length < B - 1 := by omega
    exact ⟨hpn, hpl, hr⟩
  · -- a protected p outside K would make K too small
    intro hp
    by_cases hpS : p ∈ K
    · exact hpS
    · exfalso
      obtain ⟨hpn, hpl, hr⟩ := hp
      have hpl' : R < len p := hpl
      -- K is included in largerKeys n p
      have hincl : ∀ s, s ∈ K → s ∈ largerKeys R len n p := by
        intro s hs
        obtain ⟨hsn, hsl⟩ := hmem s hs
        have hsl' : R < len s := hsl
        show s ∈ filt (fun i => longb R (len i) && keyLtb (len p, p) (len i, i)) (seqN 0 n)
        rw [mem_filt]
        refine ⟨(mem_seqN 0 n s).mpr ⟨Nat.zero_le _, by omega⟩, ?_⟩
        show (longb R (len s) && keyLtb (len p, p) (len s, s)) = true
        rw [Bool.and_eq_true]
        exact ⟨decide_eq_true hsl', (key_ltb_spec _ _).mpr (htop s p hs hpn hpl hpS)⟩
      have h1 := nodup_incl_length K hnd (largerKeys R len n p) hincl
      -- p :: K is included in the long arrivals
      have hincl2 : ∀ s, s ∈ p :: K → s ∈ filt (fun j => longb R (len j)) (seqN 0 n) := by
        intro s hs
        have hs' : s < n ∧ isLong R (len s) := by
          rw [List.mem_cons] at hs
          cases hs with
          | inl hs =>
            rw [hs]
            exact ⟨hpn, hpl⟩
          | inr hs => exact hmem s hs
        obtain ⟨hsn, hsl⟩ := hs'
        have hsl' : R < len s := hsl
        rw [mem_filt]
        exact ⟨(mem_seqN 0 n s).mpr ⟨Nat.zero_le _, by omega⟩, decide_eq_true hsl'⟩
      have h2 := nodup_incl_length (p :: K) (NoDupL.cons hpS hnd) _ hincl2
      have h2' : K.length + 1 ≤ longCount R len n := h2
      omega

end PackingTheory
