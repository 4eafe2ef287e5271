# Reads a chaos log in order and prints one line of counts:
#   sections=N overlaps=N violations=N outlived=N handovers_after_kill=N
#   increments_bad=N increments_bad_outlived=N fences=n/a|N fence_violations=N
#   hung=N failovers=N failover_overlaps=N failover_increments=N terms=N
# Records: enter TAG READ FENCE | exit TAG WROTE | overlap TAG OTHER (the marker
# witness) | kill TAG (logged before the SIGKILL is sent) | term TAG (the
# section itself, when a SIGTERM ended it: a holder stopped by --on-lost
# term; like a kill, it ends the section where it stands) | lost TAG (its
# bufferlock said the lock was lost) | hung TAG | epoch restart (the server
# was restarted without its data: its fence counters start again, so the
# fences may go down once after it; any other decrease is a violation) |
# epoch failover ... epoch failover-done (a Sentinel failover, from before
# the command until the old master replicates the new one: a lock taken
# just before can be lost and two masters can answer at once, so an overlap
# or a bad increment involving a holder that entered in that window is
# counted apart, fences in it are not compared, and they may go down once
# after it).
#
# Two holders at once (the later one entered while the earlier had neither
# exited nor been killed) are a violation, unless the earlier one's
# bufferlock reported its lock lost: that holder outlived its lock (a pause
# longer than the TTL, a restart that lost the key), counted apart.
{ line++ }
$1 == "enter" {
  tag = $2
  entered[tag] = line
  if (failover) in_failover[tag] = 1
  read[tag] = $3
  if (cur != "" && !(cur in exited) && !(cur in killed)) pair(cur, tag)
  else if (cur != "" && !(cur in exited)) handovers++
  # the counter: what the previous holder left, or either value if it was killed
  if (cur == "") ok = ($3 == 0)
  else if (cur in exited) ok = ($3 == wrote[cur])
  else ok = ($3 == read[cur] || $3 == read[cur] + 1)
  # a late write by a holder that outlived its lock shows here, at the next enter
  if (!ok) { bad_incr[tag] = cur; bad_stray[tag] = stray }
  stray = ""
  if ($4 != "-") {
    fenced++
    if (last_fence != "" && $4 + 0 <= last_fence + 0) {
      if (failover) ;
      else if (fresh_start) fresh_start = 0
      else fence_bad++
    }
    last_fence = $4
  }
  cur = tag
  sections_started++
}
$1 == "exit" {
  exited[$2] = line; wrote[$2] = $3; sections++
  if ($2 != cur) stray = $2
}
$1 == "kill" { killed[$2] = line }
$1 == "term" { killed[$2] = line; terms++ }
$1 == "lost" { lost[$2] = 1 }
$1 == "hung" { hung++ }
$1 == "epoch" { fresh_start = 1 }
$1 == "epoch" && $2 == "failover" { failover = 1; failovers++ }
$1 == "epoch" && $2 == "failover-done" { failover = 0 }
# The marker witness: the other holder was still alive when TAG got the lock
# (logged before TAG's enter); not an overlap if its kill was logged before.
$1 == "overlap" {
  if (!($3 in killed)) pair($3, $2)
}
function pair(a, b) { pairs[a SUBSEP b] = 1 }
END {
  for (p in pairs) {
    split(p, ab, SUBSEP)
    overlaps++
    if (ab[1] in lost) outlived++
    else if ((ab[1] in in_failover) || (ab[2] in in_failover)) failover_overlaps++
    else violations++
  }
  for (t in bad_incr) {
    incr++
    if ((bad_incr[t] in lost) || (t in lost) || (bad_stray[t] in lost)) incr_outlived++
    else if ((bad_incr[t] in in_failover) || (t in in_failover) || (bad_stray[t] in in_failover)) incr_failover++
  }
  printf "sections=%d overlaps=%d violations=%d outlived=%d handovers_after_kill=%d increments_bad=%d increments_bad_outlived=%d fences=%s fence_violations=%d hung=%d failovers=%d failover_overlaps=%d failover_increments=%d terms=%d\n",
    sections, overlaps + 0, violations + 0, outlived + 0, handovers + 0, incr + 0, incr_outlived + 0,
    (fenced ? fenced : "n/a"), fence_bad + 0, hung + 0, failovers + 0, failover_overlaps + 0, incr_failover + 0,
    terms + 0
}
