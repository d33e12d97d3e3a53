// Package diskspace tells the free space of a file system: the retention
// Keeper's disk reserve and the SQLite store's full-disk errors read it.
package diskspace
