package replay

import (
	"fmt"
	"path"
	"strings"
)

// validatePolicy checks the parts of a Policy that can be malformed.
func validatePolicy(p Policy) error {
	for _, pat := range p.Names {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("%w: Policy.Names pattern %q: %v", ErrInvalidPolicy, pat, err)
		}
	}
	for _, s := range p.StripPaths {
		if _, _, err := parseStripPath(s); err != nil {
			return err
		}
	}
	for _, k := range p.Kinds {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("%w: empty entry in Policy.Kinds", ErrInvalidPolicy)
		}
	}
	return nil
}

// parseStripPath splits "Kind:/json/pointer" into its kind ("" for every
// kind) and pointer tokens.
func parseStripPath(s string) (kind string, tokens []string, err error) {
	ptr := s
	if !strings.HasPrefix(s, "/") {
		var ok bool
		kind, ptr, ok = strings.Cut(s, ":")
		if !ok || kind == "" {
			return "", nil, fmt.Errorf("%w: strip path %q: want a JSON pointer (\"/spec/x\") or \"Kind:/spec/x\"", ErrInvalidPolicy, s)
		}
	}
	tokens, err = parsePointer(ptr)
	if err != nil {
		return "", nil, fmt.Errorf("%w: strip path %q: %v", ErrInvalidPolicy, s, err)
	}
	if len(tokens) == 0 {
		return "", nil, fmt.Errorf("%w: strip path %q would remove the whole object", ErrInvalidPolicy, s)
	}
	return kind, tokens, nil
}

// parsePointer splits an RFC 6901 JSON pointer into unescaped tokens.
func parsePointer(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("JSON pointer %q must start with '/'", ptr)
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(p, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("JSON pointer %q: bad escape in %q", ptr, p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// pointer joins tokens into an RFC 6901 JSON pointer.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
