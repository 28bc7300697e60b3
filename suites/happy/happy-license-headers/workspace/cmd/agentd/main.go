// Copyright 2026 Acme Corp.
// SPDX-License-Identifier: Apache-2.0

package main

import "github.com/acme/agentd/internal/server"

func main() {
	server.Run()
}
