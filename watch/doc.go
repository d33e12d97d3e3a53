// Package watch records a gap-aware history of Kubernetes objects.
package watch
