(** * Extract: OCaml extraction of the executable loader [run], of the
    sort-free [protected_set] (used by the differential test to compare the
    definition with the Python sorting-based one), and of the bounded-wait
    driver [bw_run] with its proved bound [bw_delay_bound].

    [nat] is extracted to OCaml [int] (ExtrOcamlNatInt); [Nat.leb] is mapped to
    the OCaml primitive [<=].  The extraction mapping is
    part of the trusted base of the differential test, not of the proofs. *)

From Coq Require Import Extraction ExtrOcamlBasic ExtrOcamlNatInt.
From PackingTheory Require Import Defs Exec BoundedWait BoundedWaitExec.

Extraction Language OCaml.

Extract Inlined Constant Nat.leb => "(<=)".

Extraction "packing_extracted.ml" run protected_set arr_len bw_run bw_delay_bound.
