import PackingTheory.Defs
import PackingTheory.Semantics
import PackingTheory.KeyLemma
import PackingTheory.Invariant

/-!
# Corollaries of the protected-set invariant

Mirror of `proofs/coq/Corollaries.v`: mass bound, uniform mass bound,
threshold, startup, repeated corpus, earliest pass and the `B = 1000` worked
examples. All statements are about arbitrary reachable states.
-/

namespace PackingTheory

theorem mass_app (b1 b2 : Buffer) : mass (b1 ++ b2) = mass b1 + mass b2 := by
  induction b1 with
  | nil =>
    show mass b2 = 0 + mass b2
    omega
  | cons s b1 ih =>
    show s.cur + mass (b1 ++ b2) = (s.cur + mass b1) + mass b2
    rw [ih]
    omega

theorem sum_len_le_mass (len : Nat → Nat) (l : List Nat) (hnd : NoDupL l) :
    ∀ b, (∀ p, p ∈ l → unchanged len p ∈ b) → sumLen len l ≤ mass b := by
  induction hnd with
  | nil =>
    intro b _
    exact Nat.zero_le _
  | @cons p l hnot _ ih =>
    intro b hin
    obtain ⟨b1, b2, eb⟩ := in_split (unchanged len p) b (hin p (List.Mem.head _))
    have hrest : sumLen len l ≤ mass (b1 ++ b2) := by
      apply ih
      intro q hq
      have hq' : unchanged len q ∈ b1 ++ unchanged len p :: b2 := by
        rw [← eb]
        exact hin q (List.Mem.tail _ hq)
      cases List.mem_append.mp hq' with
      | inl hx => exact List.mem_append.mpr (Or.inl hx)
      | inr hx =>
        rw [List.mem_cons] at hx
        cases hx with
        | inl hx =>
          have e : q = p := congrArg Span.sid hx
          rw [e] at hq
          exact absurd hq hnot
        | inr hx => exact List.mem_append.mpr (Or.inr hx)
    rw [mass_app] at hrest
    rw [eb, mass_app]
    show len p + sumLen len l ≤ mass b1 + (len p + mass b2)
    omega

theorem mass_bound (R B : Nat) (len : Nat → Nat) (st : State) (h : Reachable R B len st) :
    sumLen len (protectedSet R B len st.narr) ≤ mass st.buf := by
  apply sum_len_le_mass len _ (protected_set_NoDup R B len st.narr)
  intro p hp
  exact (protected_invariant R B len st h p ((protected_set_spec R B len st.narr p).mp hp)).1

theorem sum_len_long (R : Nat) (len : Nat → Nat) (l : List Nat)
    (h : ∀ i, i ∈ l → R < len i) : (R + 1) * l.length ≤ sumLen len l := by
  induction l with
  | nil =>
    show (R + 1) * 0 ≤ 0
    omega
  | cons i t ih =>
    have h1 : R < len i := h i (List.Mem.head _)
    have h2 := ih (fun j hj => h j (List.Mem.tail _ hj))
    show (R + 1) * (t.length + 1) ≤ len i + sumLen len t
    rw [Nat.mul_add, Nat.mul_one]
    omega

theorem mass_bound_uniform (R B : Nat) (len : Nat → Nat) (st : State)
    (h : Reachable R B len st) :
    (R + 1) * (protectedSet R B len st.narr).length ≤ mass st.buf :=
  Nat.le_trans
    (sum_len_long R len _ (fun i hi => ((protected_set_spec R B len st.narr i).mp hi).2.1))
    (mass_bound R B len st h)

/-- Fewer than `B` arrivals of length ≥ l (with l > R): every arrived
occurrence of length ≥ l is protected. -/
theorem protected_below_threshold (R B : Nat) (len : Nat → Nat) (n l i : Nat)
    (hl : R < l) (hc : countGe len l n < B) (hi : i < n) (hli : l ≤ len i) :
    isProtected R B len n i := by
  have hlt : (largerKeys R len n i).length < countGe len l n := by
    unfold largerKeys countGe
    apply filter_length_lt _ _ _ i
    · intro x _ hx
      have hx' : (longb R (len x) && keyLtb (len i, i) (len x, x)) = true := hx
      rw [Bool.and_eq_true] at hx'
      obtain ⟨_, hk⟩ := hx'
      rw [key_ltb_spec] at hk
      have hk' : len i < len x ∨ (len i = len x ∧ i < x) := hk
      show decide (l ≤ len x) = true
      rw [decide_eq_true_eq]
      cases hk' with
      | inl hk' => omega
      | inr hk' =>
        obtain ⟨hk1, _⟩ := hk'
        omega
    · exact (mem_seqN 0 n i).mpr ⟨Nat.zero_le _, by omega⟩
    · show decide (l ≤ len i) = true
      rw [decide_eq_true_eq]
      exact hli
    · show (longb R (len i) && keyLtb (len i, i) (len i, i)) = false
      have hk : keyLtb (len i, i) (len i, i) = false := by
        cases hb : keyLtb (len i, i) (len i, i) with
        | false => rfl
        | true =>
          exfalso
          have h1 := (key_ltb_spec _ _).mp hb
          have h2 : len i < len i ∨ (len i = len i ∧ i < i) := h1
          cases h2 with
          | inl h3 => omega
          | inr h3 =>
            obtain ⟨_, h4⟩ := h3
            omega
      rw [hk, Bool.and_false]
  refine ⟨hi, (show R < len i by omega), ?_⟩
  omega

theorem unstarted_below_threshold (R B : Nat) (len : Nat → Nat) (st : State) (l : Nat)
    (h : Reachable R B len st) (hl : R < l) (hc : countGe len l st.narr < B)
    (i : Nat) (hli : l ≤ len i) : i ∉ st.started := by
  intro hin
  have hi : i < st.narr := (reachable_wf R B len st h).2.2 i hin
  have hp := protected_below_threshold R B len st.narr l i hl hc hi hli
  exact (protected_invariant R B len st h i hp).2 hin

theorem long_count_count_ge (R : Nat) (len : Nat → Nat) (n : Nat) :
    longCount R len n = countGe len (R + 1) n := rfl

/-- Startup: while fewer than `B` long occurrences have arrived, every started
occurrence is short. -/
theorem startup (R B : Nat) (len : Nat → Nat) (st : State) (h : Reachable R B len st)
    (hc : longCount R len st.narr < B) (i : Nat) (hin : i ∈ st.started) : len i ≤ R := by
  by_cases hle : len i ≤ R
  · exact hle
  · exfalso
    rw [long_count_count_ge] at hc
    exact unstarted_below_threshold R B len st (R + 1) h (Nat.lt_succ_self R) hc i
      (by omega) hin

/-! ## Repeated corpus -/

def corpusLen (c : List Nat) (i : Nat) : Nat := nthD c (i % c.length)

def countSrc (l : Nat) (c : List Nat) : Nat := (filt (fun L => decide (l ≤ L)) c).length

def ceilDiv (b r : Nat) : Nat := (b + r - 1) / r

theorem filt_ext (p q : Nat → Bool) (l : List Nat) (h : ∀ x, x ∈ l → p x = q x) :
    filt p l = filt q l := by
  induction l with
  | nil => rfl
  | cons a t ih =>
    have ih' := ih (fun x hx => h x (List.Mem.tail _ hx))
    have ha := h a (List.Mem.head _)
    show (if p a = true then a :: filt p t else filt p t) =
      (if q a = true then a :: filt q t else filt q t)
    rw [ha, ih']

theorem filter_seq_shift (g : Nat → Bool) (m a : Nat) :
    (filt g (seqN a m)).length = (filt (fun k => g (a + k)) (seqN 0 m)).length := by
  induction m with
  | zero => rfl
  | succ m ih =>
    have e1 : (filt g (seqN a (m + 1))).length =
        (filt g (seqN a m)).length + (filt g [a + m]).length := by
      rw [seqN_succ, filt_append, List.length_append]
    have e2 : (filt (fun k => g (a + k)) (seqN 0 (m + 1))).length =
        (filt (fun k => g (a + k)) (seqN 0 m)).length +
          (filt (fun k => g (a + k)) [0 + m]).length := by
      rw [seqN_succ, filt_append, List.length_append]
    have e3 : (filt g [a + m]).length = (filt (fun k => g (a + k)) [0 + m]).length := by
      show (if g (a + m) = true then [a + m] else []).length =
        (if g (a + (0 + m)) = true then [0 + m] else []).length
      rw [Nat.zero_add]
      by_cases hg : g (a + m) = true
      · rw [if_pos hg, if_pos hg, List.length_cons, List.length_cons]
      · rw [if_neg hg, if_neg hg]
    omega

theorem filter_nth_seq (g : Nat → Bool) (c : List Nat) :
    (filt (fun k => g (nthD c k)) (seqN 0 c.length)).length = (filt g c).length := by
  induction c with
  | nil => rfl
  | cons x c ih =>
    show (filt (fun k => g (nthD (x :: c) k)) (0 :: seqN 1 c.length)).length =
      (filt g (x :: c)).length
    have hshift := filter_seq_shift (fun k => g (nthD (x :: c) k)) c.length 1
    have hext : filt (fun k => g (nthD (x :: c) (1 + k))) (seqN 0 c.length) =
        filt (fun k => g (nthD c k)) (seqN 0 c.length) := by
      apply filt_ext
      intro k _
      show g (nthD (x :: c) (1 + k)) = g (nthD c k)
      rw [Nat.add_comm 1 k]
      rfl
    have hx : filt (fun k => g (nthD (x :: c) k)) (0 :: seqN 1 c.length) =
        (if g x = true then 0 :: filt (fun k => g (nthD (x :: c) k)) (seqN 1 c.length)
          else filt (fun k => g (nthD (x :: c) k)) (seqN 1 c.length)) := rfl
    have hy : filt g (x :: c) = (if g x = true then x :: filt g c else filt g c) := rfl
    rw [hx, hy]
    by_cases hg : g x = true
    · rw [if_pos hg, if_pos hg, List.length_cons, List.length_cons, hshift, hext, ih]
    · rw [if_neg hg, if_neg hg, hshift, hext, ih]

theorem block_count (c : List Nat) (l E : Nat) (hc : 0 < c.length) :
    (filt (fun j => decide (l ≤ corpusLen c j)) (seqN (E * c.length) c.length)).length =
      countSrc l c := by
  have hshift := filter_seq_shift (fun j => decide (l ≤ corpusLen c j)) c.length (E * c.length)
  have hext : filt (fun k => decide (l ≤ corpusLen c (E * c.length + k))) (seqN 0 c.length) =
      filt (fun k => decide (l ≤ nthD c k)) (seqN 0 c.length) := by
    apply filt_ext
    intro k hk
    have hk' := (mem_seqN 0 c.length k).mp hk
    obtain ⟨_, hk2⟩ := hk'
    have hk3 : k < c.length := by omega
    have hmod : (E * c.length + k) % c.length = k := by
      rw [Nat.add_comm, Nat.add_mul_mod_self_right, Nat.mod_eq_of_lt hk3]
    show decide (l ≤ nthD c ((E * c.length + k) % c.length)) = decide (l ≤ nthD c k)
    rw [hmod]
  rw [hshift, hext]
  exact filter_nth_seq (fun L => decide (l ≤ L)) c

theorem count_ge_corpus (c : List Nat) (l E : Nat) (hc : 0 < c.length) :
    countGe (corpusLen c) l (E * c.length) = E * countSrc l c := by
  induction E with
  | zero =>
    have h0 : 0 * c.length = 0 := Nat.zero_mul _
    unfold countGe
    rw [h0, Nat.zero_mul]
    rfl
  | succ E ih =>
    have e : (E + 1) * c.length = E * c.length + c.length := by
      rw [Nat.add_mul, Nat.one_mul]
    have e2 : (E + 1) * countSrc l c = E * countSrc l c + countSrc l c := by
      rw [Nat.add_mul, Nat.one_mul]
    have hsplit : countGe (corpusLen c) l (E * c.length + c.length) =
        countGe (corpusLen c) l (E * c.length) +
          (filt (fun j => decide (l ≤ corpusLen c j)) (seqN (E * c.length) c.length)).length := by
      unfold countGe
      rw [seqN_add, filt_append, List.length_append, Nat.zero_add]
    have hb := block_count c l E hc
    rw [e, e2, hsplit, ih, hb]

theorem count_ge_mono (len : Nat → Nat) (l n m : Nat) (h : n ≤ m) :
    countGe len l n ≤ countGe len l m := by
  have e : m = n + (m - n) := by omega
  unfold countGe
  rw [e, seqN_add, filt_append, List.length_append]
  omega

theorem nthD_mem (c : List Nat) (k : Nat) (h : k < c.length) : nthD c k ∈ c := by
  induction c generalizing k with
  | nil =>
    have h0 : ([] : List Nat).length = 0 := rfl
    exfalso
    omega
  | cons x t ih =>
    cases k with
    | zero => exact List.Mem.head _
    | succ k =>
      have hl : (x :: t).length = t.length + 1 := rfl
      have h' : k < t.length := by omega
      exact List.Mem.tail _ (ih k h')

theorem length_pos_of_mem {a : Nat} {l : List Nat} (h : a ∈ l) : 0 < l.length := by
  cases l with
  | nil => cases h
  | cons y t =>
    show 0 < t.length + 1
    omega

theorem count_src_pos (c : List Nat) (l i : Nat) (hc : 0 < c.length)
    (hl : l ≤ corpusLen c i) : 0 < countSrc l c := by
  have hin : corpusLen c i ∈ filt (fun L => decide (l ≤ L)) c := by
    apply (mem_filt _ _ _).mpr
    refine ⟨nthD_mem c (i % c.length) (Nat.mod_lt i hc), ?_⟩
    show decide (l ≤ corpusLen c i) = true
    rw [decide_eq_true_eq]
    exact hl
  exact length_pos_of_mem hin

theorem repeated_corpus (R B : Nat) (c : List Nat) (E l : Nat) (st : State)
    (hc : 0 < c.length) (hl : R < l) (hE : E * countSrc l c < B)
    (h : Reachable R B (corpusLen c) st) (hn : st.narr ≤ E * c.length)
    (i : Nat) (hi : l ≤ corpusLen c i) : i ∉ st.started := by
  apply unstarted_below_threshold R B (corpusLen c) st l h hl _ i hi
  have h1 := count_ge_mono (corpusLen c) l _ _ hn
  rw [count_ge_corpus c l E hc] at h1
  omega

/-- An occurrence of length ≥ l can only have started by the end of pass `p`
(at most `p * |c|` arrivals) if `B ≤ p * r`. -/
theorem earliest_pass (R B : Nat) (c : List Nat) (p l : Nat) (st : State) (i : Nat)
    (hc : 0 < c.length) (hl : R < l) (h : Reachable R B (corpusLen c) st)
    (hn : st.narr ≤ p * c.length) (hi : l ≤ corpusLen c i) (hin : i ∈ st.started) :
    B ≤ p * countSrc l c := by
  by_cases hle : B ≤ p * countSrc l c
  · exact hle
  · exact absurd hin (repeated_corpus R B c p l st hc hl (by omega) h hn i hi)

theorem ceil_div_spec (b r p : Nat) (hr : 0 < r) : b ≤ p * r ↔ ceilDiv b r ≤ p := by
  unfold ceilDiv
  have hdm : (b + r - 1) % r + r * ((b + r - 1) / r) = b + r - 1 := Nat.mod_add_div (b + r - 1) r
  have hmb : (b + r - 1) % r < r := Nat.mod_lt (b + r - 1) hr
  have e2 : p * r = r * p := Nat.mul_comm p r
  constructor
  · intro h
    by_cases hq : (b + r - 1) / r ≤ p
    · exact hq
    · exfalso
      have hq' : p + 1 ≤ (b + r - 1) / r := by omega
      have hm : r * (p + 1) ≤ r * ((b + r - 1) / r) := Nat.mul_le_mul (Nat.le_refl r) hq'
      have e1 : r * (p + 1) = r * p + r := by rw [Nat.mul_add, Nat.mul_one]
      omega
  · intro h
    have hm : r * ((b + r - 1) / r) ≤ r * p := Nat.mul_le_mul (Nat.le_refl r) h
    omega

theorem earliest_pass_ceil (R B : Nat) (c : List Nat) (p l : Nat) (st : State) (i : Nat)
    (hc : 0 < c.length) (hl : R < l) (h : Reachable R B (corpusLen c) st)
    (hn : st.narr ≤ p * c.length) (hi : l ≤ corpusLen c i) (hin : i ∈ st.started) :
    ceilDiv B (countSrc l c) ≤ p :=
  (ceil_div_spec B (countSrc l c) p (count_src_pos c l i hc hi)).mp
    (earliest_pass R B c p l st i hc hl h hn hi hin)

/-! Worked examples from the paper, `B = 1000`. -/
theorem earliest_pass_r789 : ceilDiv 1000 789 = 2 := by decide
theorem earliest_pass_r196 : ceilDiv 1000 196 = 6 := by decide
theorem earliest_pass_r39 : ceilDiv 1000 39 = 26 := by decide
theorem earliest_pass_r9 : ceilDiv 1000 9 = 112 := by decide
theorem earliest_pass_r1 : ceilDiv 1000 1 = 1000 := by decide

end PackingTheory
