// Package pgtruth runs krply's truth test (krplytest/truth) on a PostgreSQL
// journal: the same workload, faults, seams and check as on SQLite, with
// every recorder, querying process and the check opening one database of
// a real PostgreSQL server (storage/postgres/internal/pgtest). Beside it,
// TestReplicaRelistKeepsNewerObjects has two replicas of one cluster
// record into one database while one of them relists. It has tests only.
package pgtruth
