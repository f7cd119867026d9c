"""dragon_model: the schedule-writing model, its training and constrained generation. Built in issue 6."""
