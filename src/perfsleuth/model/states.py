"""Thread states a sample can carry (off-CPU / wall-clock modes); "" = unknown. Apart from
the profile's module (which names them as STATES too) so that every command's --state
choices come without importing it."""

STATES = ("running", "mutex", "condvar", "io", "sleep", "other")
