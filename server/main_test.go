package server_test

import (
	"os"
	"testing"

	"github.com/krply/krply/krplytest/testenv"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(benchRecorderEnv); path != "" {
		os.Exit(benchRecorderMain(path))
	}
	os.Exit(testenv.RunMain(m))
}
