package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the dump command lands.
func newDumpCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "dump",
		Short:  "dump (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("dump is not implemented yet")
		},
	}
}
