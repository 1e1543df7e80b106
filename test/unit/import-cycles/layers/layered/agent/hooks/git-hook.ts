// Fixture: a hook.
export const hook = 1;
