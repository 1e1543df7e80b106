// Fixture: validation.
export const validate = 1;
