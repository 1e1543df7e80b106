// Fixture: the controller's options.
export const options = 1;
