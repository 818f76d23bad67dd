import PackingTheory.Defs
import PackingTheory.Semantics

/-!
# KeyLemma: no legal selection picks an unchanged protected span

Mirror of `proofs/coq/KeyLemma.v`. A protected span is long; unchanged, the
fitting rule cannot take it. If it were minimal by (current length, id), every
other buffered span would be a distinct long arrived occurrence with a
strictly larger key, so `|buffer| - 1 ≤ |largerKeys| < B - 1`, contradicting
`|buffer| ≥ B`.
-/

namespace PackingTheory

theorem key_lemma (R B : Nat) (len : Nat → Nat) (st : State) (s : Span)
    (hwf : wf len st) (hB : B ≤ st.buf.length) (hin : s ∈ st.buf)
    (hcur : s.cur = s.orig) (hsel : selectable R st.buf s) :
    ¬ isProtected R B len st.narr s.sid := by
  intro hp
  obtain ⟨n, b, h⟩ := st
  obtain ⟨hlt, hlong, hcnt⟩ := hp
  have hlong' : R < len s.sid := hlong
  have hcnt' : (largerKeys R len n s.sid).length < B - 1 := hcnt
  obtain ⟨hb, hi, _⟩ := hwf
  have hb' : ∀ t, t ∈ b → t.sid < n ∧ t.orig = len t.sid ∧ t.cur ≤ t.orig := hb
  have hi' : incrIds b := hi
  have hin' : s ∈ b := hin
  have hB' : B ≤ b.length := hB
  obtain ⟨_, horig, _⟩ := hb' s hin'
  have hsel' : fits R s ∨ lexmin b s := hsel
  cases hsel' with
  | inl hfit =>
    obtain ⟨c, hc, hsc⟩ := hfit
    omega
  | inr hmin =>
    have hmin' : ∀ t, t ∈ b → lexLe (s.cur, s.sid) (t.cur, t.sid) := hmin
    obtain ⟨b1, b2, hsplit⟩ := in_split s b hin'
    subst hsplit
    obtain ⟨hi1, hi2, hi3⟩ := (incr_ids_app b1 (s :: b2)).mp hi'
    have hi2' : (∀ u, u ∈ b2 → s.sid < u.sid) ∧ incrIds b2 := hi2
    have hcross : ∀ x y, x ∈ b1 → y ∈ b2 → x.sid < y.sid :=
      fun x y hx hy => hi3 x y hx (List.Mem.tail _ hy)
    have hrest : incrIds (b1 ++ b2) := (incr_ids_app b1 b2).mpr ⟨hi1, hi2'.2, hcross⟩
    have hnd : NoDupL (ids (b1 ++ b2)) := incr_ids_NoDup (b1 ++ b2) hrest
    have hincl : ∀ j, j ∈ ids (b1 ++ b2) → j ∈ largerKeys R len n s.sid := by
      intro j hj
      obtain ⟨t, ht, hjt⟩ := (mem_ids (b1 ++ b2) j).mp hj
      have ht' : t ∈ b1 ++ s :: b2 := by
        cases List.mem_append.mp ht with
        | inl ht => exact List.mem_append.mpr (Or.inl ht)
        | inr ht => exact List.mem_append.mpr (Or.inr (List.Mem.tail _ ht))
      obtain ⟨htn, hto, htc⟩ := hb' t ht'
      have hne : t.sid ≠ s.sid := by
        cases List.mem_append.mp ht with
        | inl ht =>
          have := hi3 t s ht (List.Mem.head _)
          omega
        | inr ht =>
          have := hi2'.1 t ht
          omega
      have hm : s.cur < t.cur ∨ (s.cur = t.cur ∧ s.sid ≤ t.sid) := hmin' t ht'
      subst hjt
      unfold largerKeys
      apply (mem_filt _ _ _).mpr
      refine ⟨(mem_seqN 0 n t.sid).mpr ⟨Nat.zero_le _, by omega⟩, ?_⟩
      show (longb R (len t.sid) && keyLtb (len s.sid, s.sid) (len t.sid, t.sid)) = true
      rw [Bool.and_eq_true]
      refine ⟨?_, ?_⟩
      · show decide (R < len t.sid) = true
        rw [decide_eq_true_eq]
        cases hm with
        | inl hm => omega
        | inr hm =>
          obtain ⟨hm1, _⟩ := hm
          omega
      · rw [key_ltb_spec]
        show len s.sid < len t.sid ∨ (len s.sid = len t.sid ∧ s.sid < t.sid)
        by_cases hl : len s.sid < len t.sid
        · exact Or.inl hl
        · refine Or.inr ⟨?_, ?_⟩
          · cases hm with
            | inl hm => omega
            | inr hm =>
              obtain ⟨hm1, _⟩ := hm
              omega
          · cases hm with
            | inl hm => omega
            | inr hm =>
              obtain ⟨hm1, hm2⟩ := hm
              omega
    have hlen := nodup_incl_length (ids (b1 ++ b2)) hnd (largerKeys R len n s.sid) hincl
    rw [length_ids, List.length_append] at hlen
    rw [List.length_append, List.length_cons] at hB'
    omega

end PackingTheory
