package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the demo command lands.
func newDemoCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "demo",
		Short:  "demo (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("demo is not implemented yet")
		},
	}
}
