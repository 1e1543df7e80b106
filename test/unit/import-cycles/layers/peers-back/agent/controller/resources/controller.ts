// Fixture: the controller.
export const controller = 1;
