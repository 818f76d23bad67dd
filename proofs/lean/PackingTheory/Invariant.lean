import PackingTheory.Defs
import PackingTheory.Semantics
import PackingTheory.KeyLemma

/-!
# Invariant: protected occurrences are buffered, unchanged, unstarted

Mirror of `proofs/coq/Invariant.v`. Main theorem `protected_invariant`: in every
reachable state every protected occurrence `p` has its span `⟨p, len p, len p⟩`
in the buffer and `p` is not in the started history.
-/

namespace PackingTheory

theorem larger_keys_succ (R : Nat) (len : Nat → Nat) (n p : Nat) :
    (largerKeys R len n p).length ≤ (largerKeys R len (n + 1) p).length := by
  unfold largerKeys
  rw [seqN_succ, filt_append, List.length_append]
  omega

/-- Protection can only be lost by new arrivals, never gained by old ones. -/
theorem protected_succ (R B : Nat) (len : Nat → Nat) (n p : Nat)
    (h : isProtected R B len (n + 1) p) (hp : p < n) : isProtected R B len n p := by
  obtain ⟨_, h2, h3⟩ := h
  have := larger_keys_succ R len n p
  exact ⟨hp, h2, by omega⟩

def protOk (R B : Nat) (len : Nat → Nat) (st : State) : Prop :=
  ∀ p, isProtected R B len st.narr p → unchanged len p ∈ st.buf ∧ p ∉ st.started

theorem prot_ok_init (R B : Nat) (len : Nat → Nat) : protOk R B len init := by
  intro p hp
  obtain ⟨h, _, _⟩ := hp
  have h' : p < 0 := h
  exfalso
  omega

/-- Shared step of the two selection cases: the selected span is not protected. -/
theorem selected_not_protected (R B : Nat) (len : Nat → Nat) (n : Nat) (b1 b2 : Buffer)
    (s : Span) (h : List Nat) (p : Nat)
    (hwf : wf len ⟨n, b1 ++ s :: b2, h⟩)
    (hB : B ≤ (b1 ++ s :: b2).length) (hsel : selectable R (b1 ++ s :: b2) s)
    (hp : isProtected R B len n p) (hin : unchanged len p ∈ b1 ++ s :: b2) :
    s.sid ≠ p := by
  intro e
  have hsin : s ∈ b1 ++ s :: b2 := List.mem_append.mpr (Or.inr (List.Mem.head _))
  have hi : incrIds (b1 ++ s :: b2) := hwf.2.1
  have hin' : unchanged len s.sid ∈ b1 ++ s :: b2 := by
    rw [e]
    exact hin
  have hs_eq : s = unchanged len s.sid := incr_ids_unique _ s _ hi hsin hin' rfl
  have hcur : s.cur = s.orig := by
    have h1 : s.cur = (unchanged len s.sid).cur := congrArg Span.cur hs_eq
    have h2 : s.orig = (unchanged len s.sid).orig := congrArg Span.orig hs_eq
    have h3 : (unchanged len s.sid).cur = len s.sid := rfl
    have h4 : (unchanged len s.sid).orig = len s.sid := rfl
    omega
  apply key_lemma R B len ⟨n, b1 ++ s :: b2, h⟩ s hwf hB hsin hcur hsel
  show isProtected R B len n s.sid
  rw [e]
  exact hp

theorem prot_ok_step (R B : Nat) (len : Nat → Nat) (st st' : State)
    (hwf : wf len st) (hok : protOk R B len st) (hs : Step R B len st st') :
    protOk R B len st' := by
  cases hs with
  | step_arrive n b h =>
    have hh : ∀ i, i ∈ h → i < n := hwf.2.2
    have hok' : ∀ p, isProtected R B len n p → unchanged len p ∈ b ∧ p ∉ h := hok
    intro p hp
    have hp' : isProtected R B len (n + 1) p := hp
    show unchanged len p ∈ b ++ [Span.mk n (len n) (len n)] ∧ p ∉ h
    by_cases hpn : p = n
    · rw [hpn]
      refine ⟨List.mem_append.mpr (Or.inr (List.Mem.head _)), ?_⟩
      intro hin
      have := hh n hin
      omega
    · have hpn' : p < n := by
        have := hp'.1
        omega
      obtain ⟨hin, hns⟩ := hok' p (protected_succ R B len n p hp' hpn')
      exact ⟨List.mem_append.mpr (Or.inl hin), hns⟩
  | step_take n b1 s b2 h hB hsel =>
    have hok' : ∀ p, isProtected R B len n p →
        unchanged len p ∈ b1 ++ s :: b2 ∧ p ∉ h := hok
    intro p hp
    have hp' : isProtected R B len n p := hp
    obtain ⟨hin, hns⟩ := hok' p hp'
    have hne := selected_not_protected R B len n b1 b2 s h p hwf hB hsel hp' hin
    show unchanged len p ∈ b1 ++ b2 ∧ p ∉ s.sid :: h
    refine ⟨?_, ?_⟩
    · cases List.mem_append.mp hin with
      | inl hx => exact List.mem_append.mpr (Or.inl hx)
      | inr hx =>
        rw [List.mem_cons] at hx
        cases hx with
        | inl hx =>
          have e1 : (unchanged len p).sid = s.sid := congrArg Span.sid hx
          have e2 : (unchanged len p).sid = p := rfl
          exact absurd (by omega : s.sid = p) hne
        | inr hx => exact List.mem_append.mpr (Or.inr hx)
    · intro hc
      rw [List.mem_cons] at hc
      cases hc with
      | inl hc => exact hne hc.symm
      | inr hc => exact hns hc
  | step_keep n b1 s b2 h c' hB hsel _ _ =>
    have hok' : ∀ p, isProtected R B len n p →
        unchanged len p ∈ b1 ++ s :: b2 ∧ p ∉ h := hok
    intro p hp
    have hp' : isProtected R B len n p := hp
    obtain ⟨hin, hns⟩ := hok' p hp'
    have hne := selected_not_protected R B len n b1 b2 s h p hwf hB hsel hp' hin
    show unchanged len p ∈ b1 ++ Span.mk s.sid s.orig c' :: b2 ∧ p ∉ s.sid :: h
    refine ⟨?_, ?_⟩
    · cases List.mem_append.mp hin with
      | inl hx => exact List.mem_append.mpr (Or.inl hx)
      | inr hx =>
        rw [List.mem_cons] at hx
        cases hx with
        | inl hx =>
          have e1 : (unchanged len p).sid = s.sid := congrArg Span.sid hx
          have e2 : (unchanged len p).sid = p := rfl
          exact absurd (by omega : s.sid = p) hne
        | inr hx => exact List.mem_append.mpr (Or.inr (List.Mem.tail _ hx))
    · intro hc
      rw [List.mem_cons] at hc
      cases hc with
      | inl hc => exact hne hc.symm
      | inr hc => exact hns hc

theorem reachable_wf_prot_ok (R B : Nat) (len : Nat → Nat) (st : State)
    (h : Reachable R B len st) : wf len st ∧ protOk R B len st := by
  induction h with
  | reach_init => exact ⟨wf_init len, prot_ok_init R B len⟩
  | reach_step _ hs ih =>
    exact ⟨wf_step R B len _ _ ih.1 hs, prot_ok_step R B len _ _ ih.1 ih.2 hs⟩

/-- The main theorem. -/
theorem protected_invariant (R B : Nat) (len : Nat → Nat) (st : State)
    (h : Reachable R B len st) (p : Nat) (hp : isProtected R B len st.narr p) :
    Span.mk p (len p) (len p) ∈ st.buf ∧ p ∉ st.started :=
  (reachable_wf_prot_ok R B len st h).2 p hp

/-- The protected span is the only buffered span of that occurrence. -/
theorem protected_span_unique (R B : Nat) (len : Nat → Nat) (st : State)
    (h : Reachable R B len st) (p : Nat) (s : Span)
    (hp : isProtected R B len st.narr p) (hs : s ∈ st.buf) (hid : s.sid = p) :
    s = Span.mk p (len p) (len p) := by
  have hw := reachable_wf_prot_ok R B len st h
  have hin := (hw.2 p hp).1
  exact incr_ids_unique st.buf s (unchanged len p) hw.1.2.1 hs hin hid

end PackingTheory
