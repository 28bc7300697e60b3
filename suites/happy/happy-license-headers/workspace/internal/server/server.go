// Copyright 2026 Acme Corp.
// SPDX-License-Identifier: Apache-2.0

package server

import "net/http"

// Run serves the agent API until the process is stopped.
func Run() {
	_ = http.ListenAndServe(":8080", routes())
}
