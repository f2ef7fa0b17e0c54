// allergens.js — the allergens a menu item may list (API.md's codes, in
// display order) and their names, for the menu form and the menu CSV.

export const ALLERGEN_CODES = ['wheat', 'buckwheat', 'egg', 'milk', 'peanut', 'shrimp', 'crab', 'walnut', 'soy', 'sesame', 'fish', 'shellfish', 'pork', 'beef', 'chicken', 'alcohol'];

// ALLERGEN_NAMES: the names by language, in ALLERGEN_CODES' order.
export const ALLERGEN_NAMES = {
  ja: ['小麦', 'そば', '卵', '乳', '落花生', 'えび', 'かに', 'くるみ', '大豆', 'ごま', '魚', '貝', '豚肉', '牛肉', '鶏肉', 'アルコール'],
  en: ['Wheat', 'Buckwheat', 'Egg', 'Milk', 'Peanut', 'Shrimp', 'Crab', 'Walnut', 'Soy', 'Sesame', 'Fish', 'Shellfish', 'Pork', 'Beef', 'Chicken', 'Alcohol'],
};
