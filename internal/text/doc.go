// Package text makes strings that come from outside mpiprobe (job ids,
// hostnames, communicator names, environment values, command lines, bad
// input) safe to show, and draws the tables mpiprobe prints. Every place
// that prints such a string to a terminal, a log line, a table or an error
// message goes through this package, so there is one rule for what is kept,
// what is replaced and what is escaped:
//
//   - [Line] for a string inside a one-line sentence (a verdict): cut to
//     [MaxLine] runes, every character that does not print blanked;
//   - [Quote] for a value standing on its own (a table cell, a key=value
//     label, a log value, a name in a message): as it is when it is plain,
//     Go-quoted when it is empty, could be misread or could not be shown;
//   - [Echo] for bad input shown back in an error message: always quoted,
//     cut to [MaxEcho] bytes;
//   - [Escape] for running text (a log line): characters that do not
//     print are escaped in place, without quotes.
//
// A character "prints" when [strconv.IsPrint] says so: letters, marks,
// numbers, punctuation, symbols and the ASCII space. Control characters
// (ESC and so ANSI escape sequences, CR, newline, tab, DEL, C1 controls),
// line and paragraph separators, bidirectional overrides and other format
// characters, and bytes that are not valid UTF-8 never reach the output as
// they are.
//
// [Table] writes a boxed table, the one style of every table mpiprobe
// prints.
package text
