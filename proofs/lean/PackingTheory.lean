import PackingTheory.Defs
import PackingTheory.Semantics
import PackingTheory.KeyLemma
import PackingTheory.Invariant
import PackingTheory.Corollaries
import PackingTheory.Exec
import PackingTheory.TopKeys
