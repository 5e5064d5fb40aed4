package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the timeline command lands.
func newTimelineCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "timeline",
		Short:  "timeline (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("timeline is not implemented yet")
		},
	}
}
