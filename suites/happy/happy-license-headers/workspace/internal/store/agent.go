package store

// Agent is one registered agent.
type Agent struct {
	ID   string
	Host string
}
