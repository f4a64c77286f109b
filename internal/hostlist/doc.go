// Package hostlist expands the compact host lists Slurm writes in
// SLURM_JOB_NODELIST and SLURM_STEP_NODELIST: "n[1-3,5],gpu07" is n1, n2,
// n3, n5 and gpu07. A bracket holds numbers and ranges separated by
// commas; a range's lower bound sets the width of the numbers it makes
// ("n[08-10]" is n08, n09, n10); a name may hold several brackets, which
// multiply ("r[1-2]n[1-2]" is r1n1, r1n2, r2n1, r2n2). Commas outside
// brackets separate names.
//
// Expand is pure and bounded: a list that would make more than MaxHosts
// names, or a number of more than 18 digits, is refused in one line that
// says why, as is every malformed list (an unclosed or nested bracket, an
// empty item, a range running backwards).
package hostlist
