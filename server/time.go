package server

import (
	"time"

	"github.com/krply/krply/server/apiv1"
)

// ParseTime reads a time as the query API and krply's command-line tools
// take it: see apiv1.ParseTime.
func ParseTime(s string, now time.Time) (time.Time, error) { return apiv1.ParseTime(s, now) }
