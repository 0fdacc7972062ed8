"""The git and GitHub edge: every git command (`gitrun`), the branch, worktree, commit, notes
and push of an epoch (`gitops`, `record`, `publish_sequence`), what a run must do for a
skill (`recovery`), the epochs read back (`history`, `remote_notes`), the lock, and pull
requests (`forge`). It turns the core's decision into history; it never scores anything.
"""
