package thresholds

// thresholdPrefix starts the config file key of a per-event setting,
// "threshold.EVENT"; [Overrides.Format] writes it. Package config reads the
// file.
const thresholdPrefix = "threshold."

// CheckEvent returns an error if name is not a valid event name: one or
// more lowercase ASCII letters, digits, '_', '.' or '-'. help says how to
// write the setting that names the event, e.g. "use EVENT=C/T"; it ends the
// message about a missing name. It does not say whether the event exists.
func CheckEvent(name, help string) error {
	return checkEvent(name, help)
}

// ParsePartial parses the right side of an event setting, "C/T": either
// part may be empty ("500/", "/30s") but not both, and "500" without a slash
// sets only C. C is parsed as by [ParseC] and T as by [ParseT]; spaces
// around the parts are ignored. help says how to write the value, e.g. "use
// C/T, e.g. 500/10s"; it ends the message about a value that sets nothing.
// Errors are single lines without a trailing period.
func ParsePartial(s, help string) (Partial, error) {
	return parsePartial(s, help)
}
