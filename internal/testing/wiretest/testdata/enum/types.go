package enum

// Result has a field without a tag.
type Result struct {
	Tagged   string `json:"tagged"`
	Untagged string
	private  string
}

// Custom writes its JSON itself.
type Custom struct {
	Field string
}

// MarshalJSON writes nothing.
func (Custom) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }
