"""The replay: the engine resumes a run from its history, the context gives workflow code its
durable calls, commands say what the replay decided and the committer writes it."""
