package memory_test

import (
	"testing"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

func newStore(t *testing.T) storage.Store { return memory.New() }

func TestConformance(t *testing.T) {
	storagetest.Run(t, newStore)
}

func TestCompactRandomSeeds(t *testing.T) {
	storagetest.CompactRandom(t, newStore, 2, 3, 4, 5, 6, 7, 8, 9)
}
