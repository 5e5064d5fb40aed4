package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the record command lands.
func newRecordCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "record",
		Short:  "record (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("record is not implemented yet")
		},
	}
}
