package transfer

// SetBulkRecords sets how many records an import appends per bulk
// transaction until the test ends.
func SetBulkRecords(cleanup func(func()), n int64) {
	was := bulkRecords
	bulkRecords = n
	cleanup(func() { bulkRecords = was })
}
