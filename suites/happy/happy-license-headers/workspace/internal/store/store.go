package store

// Store keeps agent registrations in memory.
type Store struct {
	agents map[string]Agent
}
