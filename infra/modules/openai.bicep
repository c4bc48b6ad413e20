// Azure OpenAI for BATON_MODEL=azure-openai: a new account with one model deployment, or an
// existing account (in its own resource group, the scope main.bicep gives this module). Either
// way the apps' identity gets "Cognitive Services OpenAI User" on the account: keyless calls.
param create bool
param name string
param location string
param tags object
param deploymentName string
param modelName string
param modelVersion string
param capacity int
param userPrincipalId string

var openAiUserRole = '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'

resource created 'Microsoft.CognitiveServices/accounts@2024-10-01' = if (create) {
  name: name
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: {
    name: 'S0'
  }
  properties: {
    customSubDomainName: name
    publicNetworkAccess: 'Enabled'
    disableLocalAuth: true
  }
}

resource deployment 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = if (create) {
  parent: created
  name: deploymentName
  sku: {
    name: 'GlobalStandard'
    capacity: capacity
  }
  properties: {
    model: {
      format: 'OpenAI'
      name: modelName
      version: modelVersion
    }
  }
}

resource existingAccount 'Microsoft.CognitiveServices/accounts@2024-10-01' existing = if (!create) {
  name: name
}

resource createdAccess 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (create) {
  name: guid(resourceId('Microsoft.CognitiveServices/accounts', name), userPrincipalId, openAiUserRole)
  scope: created
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', openAiUserRole)
    principalId: userPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource existingAccess 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!create) {
  name: guid(resourceId('Microsoft.CognitiveServices/accounts', name), userPrincipalId, openAiUserRole)
  scope: existingAccount
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', openAiUserRole)
    principalId: userPrincipalId
    principalType: 'ServicePrincipal'
  }
}

output endpoint string = create ? created.properties.endpoint : existingAccount.properties.endpoint
