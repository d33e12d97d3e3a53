package server_test

import (
	"os"
	"testing"

	"github.com/krply/krply/krplytest/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }
