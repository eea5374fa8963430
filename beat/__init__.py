"""Beat: the scheduler process that fires timers and cron/interval schedules."""
