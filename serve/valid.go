package serve

// Validation of the scope a client may set, written out by hand because
// it runs on every request (the patterns are in the doc comments).

// validLang reports whether s is a language tag:
// ^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*$.
func validLang(s string) bool {
	i := 0
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	if i < 2 || i > 3 {
		return false
	}
	for i < len(s) {
		if s[i] != '-' && s[i] != '_' {
			return false
		}
		i++
		j := i
		for j < len(s) && (isLetter(s[j]) || isDigit(s[j])) {
			j++
		}
		if n := j - i; n < 2 || n > 8 {
			return false
		}
		i = j
	}
	return true
}

// validDocVersion reports whether s is a document version:
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$.
func validDocVersion(s string) bool {
	return len(s) >= 1 && len(s) <= 64 && (isLetter(s[0]) || isDigit(s[0])) && idBytes(s)
}

// validRequestID reports whether s is a request id:
// ^[A-Za-z0-9._:-]{1,128}$.
func validRequestID(s string) bool {
	return len(s) >= 1 && len(s) <= 128 && idBytes(s)
}

// idBytes reports whether every byte of s is in [A-Za-z0-9._:-].
func idBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !isDigit(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
