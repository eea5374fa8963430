"""The durable calls workflow code makes: steps, sleeps, hooks, signals, first_of, parallel,
events, patches and the replay-safe logger."""
