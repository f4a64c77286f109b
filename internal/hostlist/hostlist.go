package hostlist

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts is the most names Expand makes from one list: a bound on what
// a user's environment can make a reader allocate.
const MaxHosts = 1 << 16

// maxDigits is the longest number a bracket may hold, so that it fits in
// a uint64 with room for the range's end.
const maxDigits = 18

// Expand returns the names of list, in its order, duplicates kept as
// written. The empty list is no names. An error says what is wrong and
// where, on one line.
func Expand(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	items, err := split(list)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		names, err := expandItem(it, MaxHosts-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}

// split cuts list at the commas outside brackets, checking that brackets
// pair and do not nest.
func split(list string) ([]string, error) {
	var (
		items []string
		open  = -1 // index of the open bracket, -1 outside
		from  int
	)
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '[':
			if open >= 0 {
				return nil, fmt.Errorf("hostlist %s: bracket inside a bracket at byte %d (write n[1-3] or n[1,5])", strconv.Quote(list), i)
			}
			open = i
		case ']':
			if open < 0 {
				return nil, fmt.Errorf("hostlist %s: ']' without '[' at byte %d", strconv.Quote(list), i)
			}
			open = -1
		case ',':
			if open >= 0 {
				continue
			}
			items = append(items, list[from:i])
			from = i + 1
		}
	}
	if open >= 0 {
		return nil, fmt.Errorf("hostlist %s: '[' at byte %d is not closed", strconv.Quote(list), open)
	}
	items = append(items, list[from:])
	for _, it := range items {
		if it == "" {
			return nil, fmt.Errorf("hostlist %s: an empty name (two commas, or one at an end)", strconv.Quote(list))
		}
	}
	return items, nil
}

// expandItem expands one name with brackets into at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if limit < 1 {
			return nil, tooMany(item)
		}
		return []string{item}, nil
	}
	end := open + strings.IndexByte(item[open:], ']')
	prefix := item[:open]
	nums, err := numbers(item[open+1:end], limit)
	if err != nil {
		return nil, fmt.Errorf("hostlist item %s: %w", strconv.Quote(item), err)
	}
	// The rest of the name may hold brackets too: each number takes every
	// name of the rest.
	rest := []string{""}
	if end+1 < len(item) {
		if rest, err = expandItem(item[end+1:], limit/len(nums)); err != nil {
			return nil, err
		}
	}
	if len(nums)*len(rest) > limit {
		return nil, tooMany(item)
	}
	out := make([]string, 0, len(nums)*len(rest))
	for _, n := range nums {
		for _, r := range rest {
			out = append(out, prefix+n+r)
		}
	}
	return out, nil
}

// tooMany is the error of a list that makes more than MaxHosts names.
func tooMany(item string) error {
	return fmt.Errorf("hostlist item %s: more than %d names", strconv.Quote(item), MaxHosts)
}

// numbers expands the inside of a bracket: "1-3,5" is 1, 2, 3, 5; a
// range's numbers are as wide as its lower bound as written.
func numbers(in string, limit int) ([]string, error) {
	if in == "" {
		return nil, errors.New("empty brackets")
	}
	var out []string
	for _, part := range strings.Split(in, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := number(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = number(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("range %s runs backwards", strconv.Quote(part))
			}
		}
		if b-a >= uint64(limit-len(out)) || limit <= len(out) {
			return nil, fmt.Errorf("more than %d names", MaxHosts)
		}
		for n := a; ; n++ {
			s := strconv.FormatUint(n, 10)
			if pad := len(lo) - len(s); pad > 0 {
				s = strings.Repeat("0", pad) + s
			}
			out = append(out, s)
			if n == b {
				break
			}
		}
	}
	return out, nil
}

// number reads a bracket's decimal number.
func number(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("a number is missing in the brackets (write n[1-3,5])")
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("number %s has more than %d digits", strconv.Quote(s), maxDigits)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%s is not a number (brackets hold numbers and ranges: n[1-3,5])", strconv.Quote(s))
		}
	}
	return strconv.ParseUint(s, 10, 64)
}
