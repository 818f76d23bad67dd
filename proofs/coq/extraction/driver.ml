(* Driver for the extracted loader (see ../Extract.v).

   Input (stdin, whitespace-separated tokens):
     NCASES
     then NCASES times:
       POLICY R B ROWS [A]       POLICY = discard | continue | bounded-wait;
                                 ROWS = number of rows to report, -1 = all;
                                 A = the wait threshold (bounded-wait only)
       K b_1 ... b_K             refill batch sizes (cycled)
       M a_1 ... a_M             arrival lengths (the stream, one pass)

   Output, per case:
     case INDEX
     one line per selection:  row offset occurrence start emitted crop
     arrived N                arrivals consumed when the run stopped
     arows r_0 ... r_{N-1}    bounded-wait only: the arrival row of each
                              occurrence (the row being filled at its refill)
     bound D                  bounded-wait only: the proved start-delay bound
     protected i_1 ... i_k    the Coq protected set after those N arrivals
     end REASON               exhausted | fuel | nospan | rows

   The run stops at the first selection boundary where refilling cannot
   bring the buffer to B spans; the selections of the partially filled
   row are still printed.  With ROWS >= 0 only selections in rows
   0 .. ROWS-1 are printed (the trace is row-monotone, so this is the same
   as stopping once row ROWS is reached). *)

open Packing_extracted

let tokens =
  let buf = Buffer.create 65536 in
  let chunk = Bytes.create 65536 in
  let rec loop () =
    let n = input stdin chunk 0 (Bytes.length chunk) in
    if n > 0 then begin
      Buffer.add_subbytes buf chunk 0 n;
      loop ()
    end
  in
  loop ();
  let s = Buffer.contents buf in
  let l = String.split_on_char ' '
      (String.map (fun c -> if c = '\n' || c = '\t' || c = '\r' then ' ' else c) s) in
  ref (List.filter (fun t -> t <> "") l)

let next () =
  match !tokens with
  | [] -> failwith "unexpected end of input"
  | t :: rest -> tokens := rest; t

let next_int () =
  let t = next () in
  match int_of_string_opt t with
  | Some n -> n
  | None -> failwith ("expected an integer, got " ^ t)

let read_list () =
  let k = next_int () in
  List.init k (fun _ -> next_int ())

let print_trace rows trace =
  let truncated = ref false in
  List.iter
    (fun ev ->
      if rows >= 0 && ev.ev_row >= rows then truncated := true
      else
        Printf.printf "%d %d %d %d %d %d\n" ev.ev_row ev.ev_offset ev.ev_occ
          ev.ev_start ev.ev_emitted (if ev.ev_crop then 1 else 0))
    trace;
  !truncated

let print_end truncated stop =
  let reason =
    if truncated then "rows"
    else
      match stop with
      | Exhausted -> "exhausted"
      | OutOfFuel -> "fuel"
      | NoSpan -> "nospan"
  in
  Printf.printf "end %s\n" reason

let ints l = String.concat "" (List.map (fun i -> " " ^ string_of_int i) l)

let () =
  let ncases = next_int () in
  for idx = 0 to ncases - 1 do
    let policy = next () in
    let r = next_int () in
    let b = next_int () in
    let rows = next_int () in
    let a = if policy = "bounded-wait" then next_int () else 0 in
    let batches = read_list () in
    let arr = read_list () in
    if r < 0 || b < 0 || a < 0 || List.exists (fun x -> x < 0) (batches @ arr) then
      failwith "negative input";
    (* every selection emits at least one token when lengths and R are
       positive, so this fuel is never the binding limit *)
    let fuel = List.fold_left ( + ) 0 arr + List.length arr + 2 in
    Printf.printf "case %d\n" idx;
    match policy with
    | "discard" | "continue" ->
      let pol = if policy = "discard" then Discard else Continue in
      let res = run pol r b batches arr fuel in
      let truncated = print_trace rows res.res_trace in
      let narr = res.res_state.xs_narr in
      Printf.printf "arrived %d\n" narr;
      Printf.printf "protected%s\n" (ints (protected_set r b (arr_len arr) narr));
      print_end truncated res.res_stop
    | "bounded-wait" ->
      let res = bw_run r b a batches arr fuel in
      let truncated = print_trace rows res.br_trace in
      let narr = res.br_state.bx_narr in
      Printf.printf "arrived %d\n" narr;
      Printf.printf "arows%s\n" (ints res.br_state.bx_arows);
      Printf.printf "bound %d\n" (bw_delay_bound b a batches);
      Printf.printf "protected%s\n" (ints (protected_set r b (arr_len arr) narr));
      print_end truncated res.br_stop
    | p -> failwith ("unknown policy " ^ p)
  done
